/**
 * `GET /metrics` in Prometheus text format with vLLM's own metric names, so whatever reads a
 * real vLLM pod's metrics (a gateway, an autoscaler, a dashboard) reads the sim's unchanged.
 */

/** The numbers one scrape reports. */
export interface SimMetricValues {
  model: string;
  running: number;
  waiting: number;
  maxNumSeqs: number;
  /** Finished requests by `finished_reason` ("stop", "length"). Monotonic: `resetStats` keeps them. */
  success: Readonly<Record<string, number>>;
  promptTokens: number;
  generationTokens: number;
}

/** vLLM's metric names, as its `/metrics` spells them. */
export const VLLM_METRICS = {
  running: "vllm:num_requests_running",
  waiting: "vllm:num_requests_waiting",
  gpuCache: "vllm:gpu_cache_usage_perc",
  kvCache: "vllm:kv_cache_usage_perc",
  success: "vllm:request_success_total",
  promptTokens: "vllm:prompt_tokens_total",
  generationTokens: "vllm:generation_tokens_total",
} as const;

/** Renders one scrape. KV-cache usage is modelled as running / maxNumSeqs (0..1). */
export function renderMetrics(v: SimMetricValues): string {
  const label = `{model_name="${escapeLabel(v.model)}"}`;
  const kv = Math.min(1, v.running / v.maxNumSeqs);
  const lines = [
    ...family(VLLM_METRICS.running, "gauge", "Number of requests in model execution batches.", [
      [label, v.running],
    ]),
    ...family(VLLM_METRICS.waiting, "gauge", "Number of requests waiting to be processed.", [
      [label, v.waiting],
    ]),
    ...family(VLLM_METRICS.gpuCache, "gauge", "GPU KV-cache usage. 1 means 100 percent usage.", [
      [label, kv],
    ]),
    ...family(VLLM_METRICS.kvCache, "gauge", "KV-cache usage. 1 means 100 percent usage.", [[label, kv]]),
    ...family(
      VLLM_METRICS.success,
      "counter",
      "Count of successfully processed requests.",
      Object.entries(v.success).map(([reason, n]) => [
        `{finished_reason="${escapeLabel(reason)}",model_name="${escapeLabel(v.model)}"}`,
        n,
      ]),
    ),
    ...family(VLLM_METRICS.promptTokens, "counter", "Number of prefill tokens processed.", [
      [label, v.promptTokens],
    ]),
    ...family(VLLM_METRICS.generationTokens, "counter", "Number of generation tokens processed.", [
      [label, v.generationTokens],
    ]),
  ];
  return `${lines.join("\n")}\n`;
}

function family(name: string, type: string, help: string, samples: Array<[string, number]>): string[] {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples.map(([l, n]) => `${name}${l} ${n}`)];
}

// Prometheus label values escape backslash, double quote and newline.
function escapeLabel(s: string): string {
  return s.replace(/[\\"\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`));
}
