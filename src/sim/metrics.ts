/**
 * `GET /metrics` in Prometheus text format with vLLM's own metric names, so whatever reads a
 * real vLLM pod's metrics (a gateway, an autoscaler, a dashboard) reads the sim's unchanged.
 */
import type { SimMachine } from "./machine.js";
import type { SimStats } from "./stats.js";

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

/** What the sim itself saw, beyond vLLM's names: the numbers a load run reports. */
export interface SimOwnMetricValues {
  model: string;
  /** Peak running sequences (since start or `resetStats`). */
  maxRunning: number;
  /** Peak running + waiting: what clients had in flight here at once. */
  maxInflight: number;
  /** Overflows by how they were refused: a destroyed connection, a 429 (throttle), a 503. Monotonic. */
  refusals: Readonly<Record<"connection" | "429" | "503", number>>;
  /** OOMs of its machine. Monotonic. */
  oomEvents: number;
  /** ∫ running dt in slot-seconds since start. Monotonic: utilization = rate ÷ max_num_seqs. */
  busySlotSeconds: number;
}

/** The sim's own metrics (`sluice_sim_*`), appended after vLLM's on `/metrics`. */
export const SIM_METRICS = {
  maxRunning: "sluice_sim_max_running",
  maxInflight: "sluice_sim_max_inflight",
  refusals: "sluice_sim_refusals_total",
  oomEvents: "sluice_sim_oom_events_total",
  busySlotSeconds: "sluice_sim_busy_slot_seconds_total",
} as const;

/** Renders the `sluice_sim_*` families. */
export function renderSimMetrics(v: SimOwnMetricValues): string {
  const model = escapeLabel(v.model);
  const label = `{model_name="${model}"}`;
  const lines = [
    ...family(SIM_METRICS.maxRunning, "gauge", "Most requests running at once.", [[label, v.maxRunning]]),
    ...family(SIM_METRICS.maxInflight, "gauge", "Most requests running or waiting at once.", [
      [label, v.maxInflight],
    ]),
    ...family(
      SIM_METRICS.refusals,
      "counter",
      "Requests refused past max_num_seqs + max_waiting, by how: connection, 429 (throttle), 503.",
      Object.entries(v.refusals).map(([kind, n]) => [`{kind="${kind}",model_name="${model}"}`, n]),
    ),
    ...family(SIM_METRICS.oomEvents, "counter", "Times the machine ran out of memory and went down.", [
      [label, v.oomEvents],
    ]),
    ...family(SIM_METRICS.busySlotSeconds, "counter", "Slot-seconds spent running requests.", [
      [label, Math.round(v.busySlotSeconds * 1000) / 1000],
    ]),
  ];
  return `${lines.join("\n")}\n`;
}

/** What a sim saw, in one line for people (`sluice sim` prints it at exit). */
export function simReport(
  model: string,
  url: string,
  maxNumSeqs: number,
  s: SimStats,
  machine: SimMachine,
): string {
  return (
    `sim ${model} ${url} saw: max concurrency ${s.maxInflightSeen} ` +
    `(max running ${s.maxRunningSeen} of ${maxNumSeqs}), ${s.completed} completed, ` +
    `refusals ${s.refused} (connections ${s.refusedConnections}, 503 ${s.overloaded}), ` +
    `throttles (429) ${s.throttled}, OOM events ${machine.oomEvents}` +
    (Number.isFinite(machine.oomAt) ? ` (oom_at ${machine.oomAt}, ${s.cutByOom} requests cut)` : "")
  );
}
