/**
 * Reads what a vLLM pod says about its own load from its Prometheus text (DESIGN §1.3, "servers
 * that never refuse"): vLLM queues instead of refusing, so its waiting queue and KV-cache use are
 * the congestion signal. Pure: text in, numbers out.
 */

export interface PodLoad {
  /** `vllm:num_requests_waiting`, summed over models served by the pod. */
  waiting: number;
  /** `vllm:kv_cache_usage_perc` (newer) or `vllm:gpu_cache_usage_perc` (older), 0..1; the max over models. */
  kvUsage: number;
  running: number;
}

const LINE = /^(vllm:[a-z_]+)(?:\{[^}]*\})?\s+([0-9.eE+-]+|NaN|\+Inf)/;

export function parseVllmMetrics(text: string): PodLoad | undefined {
  let waiting = 0;
  let running = 0;
  let kv = 0;
  let seen = false;
  for (const line of text.split("\n")) {
    if (line.length === 0 || line.charCodeAt(0) === 35 /* # */) continue;
    const m = LINE.exec(line);
    if (m === null) continue;
    const value = Number(m[2]);
    if (!Number.isFinite(value)) continue;
    switch (m[1]) {
      case "vllm:num_requests_waiting":
        waiting += value;
        seen = true;
        break;
      case "vllm:num_requests_running":
        running += value;
        break;
      case "vllm:kv_cache_usage_perc":
      case "vllm:gpu_cache_usage_perc":
        if (value > kv) kv = value;
        seen = true;
        break;
    }
  }
  return seen ? { waiting, kvUsage: kv, running } : undefined;
}

/** KV-cache use at or above this is saturation (DESIGN §1.3). */
export const KV_SATURATED = 0.8;

/** Whether a pod's reported load is a congestion event. */
export function isSaturated(load: PodLoad, maxWaiting: number): boolean {
  return load.waiting > maxWaiting || load.kvUsage >= KV_SATURATED;
}
