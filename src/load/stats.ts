/**
 * What one run measured, as plain data for the receipt: the client's view (every attempt and
 * every logical request) and the pods' view (what each sim saw). Field names are snake_case
 * because the receipt is a file other tools read.
 */

/** How one HTTP attempt ended. */
export interface Attempt {
  /** Index of its client group. */
  group: number;
  /** Sent at, real ms since the run started. */
  startMs: number;
  /** Until its last byte (or the error), real ms. */
  ms: number;
  /**
   * `ok` (2xx, every byte as the sim sent it), `bytes_mismatch`, a sluice code (`queue_full`,
   * `queue_timeout`, `upstream_error`, …), `http_NNN` for a pod's own status,
   * `connection_refused`, `connection_reset`, `client_timeout`.
   */
  code: string;
  /** HTTP status, 0 when there was no answer. */
  status: number;
  /** A sluice capacity refusal (429/503 with `X-Sluice-Reason` and a `sluice_capacity` body). */
  sluiceRefusal: boolean;
  /** That refusal carried `Retry-After`, `X-Sluice-Width` and `X-Sluice-Queue-Limit`. */
  sized: boolean;
  /** `X-Sluice-Queue-Ms` of an answer, −1 when absent. */
  queueMs: number;
  /** Wait the answer asked for (`retry-after-ms`, else `Retry-After`), −1 when none. */
  retryAfterMs: number;
}

/** One point of a run's gateway replica count over time (src/load/autoscaler.ts). */
export interface ReplicaStep {
  /** When the count became `replicas`, real ms since the run's start. */
  at_ms: number;
  replicas: number;
  /** The latency the autoscaler saw at the look that added it, real ms; null for the start and for a look with nothing ended. */
  signal_ms: number | null;
}

/** How one logical request (a page, a turn, an exchange) ended, retries included. */
export interface RequestRecord {
  group: number;
  startMs: number;
  endMs: number;
  attempts: number;
  /** The last attempt's code: `ok` when it completed. */
  code: string;
  /** A `fanout` group's wave it was sent in (numbered within its group). */
  wave?: number;
}

/** Percentiles of a set of durations, in ms (nearest rank). */
export interface Percentiles {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  max: number;
}

/** What one pod (sim) saw during a run. */
export interface PodStats {
  model: string;
  url: string;
  max_num_seqs: number;
  /** Most requests running or waiting at once: what its clients had in flight here. */
  max_inflight: number;
  max_running: number;
  completed: number;
  refused_connections: number;
  throttled: number;
  overloaded: number;
  oom_events: number;
  /** Busy slot time ÷ (max_num_seqs × the measurement window). */
  utilization: number;
  /**
   * What the pod did for each tenant (`ClientGroup.tenant`), counted by the pod over the whole run
   * (drain included): calls completed and cut, usage tokens, slot-ms held. Absent without tenants.
   */
  tenants?: Record<string, PodTenantStats>;
}

/** What one pod did for one tenant, as the pod counted it (src/sim/stats.ts `TenantStats`). */
export interface PodTenantStats {
  completed: number;
  aborted: number;
  prompt_tokens: number;
  completion_tokens: number;
  slot_ms: number;
}

/**
 * What a provider account (a `kind: "provider"` pod) saw during a run, per minute from the run's
 * start: the tokens it charged (as the provider counts them: tokenizer prompt + completion, at
 * arrival) and the calls it answered 429. Its bucket starts full, so the first minute may carry up
 * to twice its `tpm` (the minute's worth it holds + a minute's refill); the minutes after show the
 * steady state.
 */
export interface AccountStats {
  model: string;
  url: string;
  /** The account's tokens and requests per minute; null when not metered. */
  tpm: number | null;
  rpm: number | null;
  served: number;
  /** 429s by the limit that said no. */
  throttled: { tokens: number; requests: number; inflight: number };
  /** Tokens charged for the calls served. */
  tokens_served: number;
  /** Tokens charged in each minute from the run's start, the drain's included (the last may be partial). */
  tokens_per_minute: number[];
  /** Tokens of every call sent (served, or answered 429: what it would have cost) in each of those minutes. */
  tokens_asked_per_minute: number[];
  /** Tokens charged in the first minute (the full bucket's + the refill's). */
  first_minute_tokens: number;
  /** Most tokens charged in one whole minute of offering after the first; null when the offering had one minute. */
  peak_minute_tokens: number | null;
  /** Tokens charged per minute over the whole minutes of offering after the first; null likewise. */
  mean_minute_tokens: number | null;
  /**
   * Tokens sent while clients offered work, beyond the one minute's worth a full bucket holds at
   * the start, per minute: `(asked − tpm) ÷ minutes offered`. An account allows `tpm` at once plus
   * `tpm` per minute, so a sender that keeps to the account keeps this ≤ `tpm` over any stretch;
   * one that does not, above it.
   */
  sustained_asked_per_minute: number;
}

/** One client group's view. */
export interface GroupStats {
  offered: number;
  /** HTTP requests sent, retries included. */
  attempts: number;
  completed: number;
  /** completed ÷ offered. */
  success_rate: number;
  /** Requests not completed, by their last attempt's code. */
  refused: Record<string, number>;
  /** Every attempt that was not `ok`, by code. */
  failed_attempts: Record<string, number>;
  latency_ms: Percentiles | null;
  queue_wait_ms: Percentiles | null;
  /**
   * Every attempt, answered or not: sent → its last byte, or its refusal, timeout or error — how
   * long a caller waited to hear (a refused call's wait counts, which `latency_ms` leaves out).
   */
  wait_ms?: Percentiles | null;
  /**
   * A `fanout` group's waves (seed 002: a panel's review is done when every finder of its wave
   * is): sent, and done with every request of the wave completed. Absent for other groups.
   */
  waves?: { offered: number; completed: number };
}

/** One run: through sluice or straight to the pods. */
export interface RunStats {
  target: "sluice" | "direct";
  /** From the first request to the end of the drain, real ms. */
  duration_ms: number;
  /** Logical requests offered. */
  offered: number;
  /** HTTP requests sent, retries included. */
  attempts: number;
  /** Logical requests answered 2xx with every byte as the sim sent it. */
  completed: number;
  /** Logical requests not completed, by their last attempt's code. */
  refused: Record<string, number>;
  /** Every attempt that was not `ok`, by code. */
  failed_attempts: Record<string, number>;
  /** Answered attempts (2xx): sent → last byte. */
  latency_ms: Percentiles | null;
  /** Completed requests: first attempt sent → last byte, retries and waits included. */
  end_to_end_ms: Percentiles | null;
  /** `X-Sluice-Queue-Ms` of answered attempts; null straight to the pods (no queue to read). */
  queue_wait_ms: Percentiles | null;
  /** Sluice refusals: sent → answer. Null when there were none. */
  refusal_ms: Percentiles | null;
  sluice_refusals: number;
  refusals_with_sizing_headers: number;
  /** Highest `max_inflight` over the pods. */
  upstream_max_inflight: number;
  /** Most sequences running at once on each machine with an OOM point, by machine. */
  machine_max_running: Record<string, number>;
  /** Busy slot time ÷ slot capacity over the measurement window, across the pods. */
  utilization: number;
  /** Refused connections + 429 + 503 answered by the pods. */
  pod_refusals: number;
  /** The same, counted from the end of the warm-up (the widths have converged). */
  pod_refusals_after_warmup: number;
  /** 429s the pods answered. */
  throttles: number;
  oom_events: number;
  /** Reservations still held after the drain (telemetry not back to zero); null straight to the pods. */
  leaked_reservations: number | null;
  /** What was left, when something was. */
  leak_detail: string[];
  bytes_mismatches: number;
  /** Provider accounts (`kind: "provider"` pods): tokens per minute as each counted them, its 429s. */
  accounts: AccountStats[];
  /** Pod widths at the end of the run, by pod (through sluice). */
  widths: Record<string, number> | null;
  groups: Record<string, GroupStats>;
  pods: PodStats[];
  /**
   * Gateway replicas over time, when the profile has an autoscaler (seed 004): the start, then
   * each replica added (`at_ms` real ms since the run's start). Absent otherwise.
   */
  replicas_over_time?: ReplicaStep[];
  /** Set when the run itself failed (the receipt is still written). */
  error?: string;
}

/** Nearest-rank percentiles of `values` (ms, rounded to 0.1 ms); null when empty. */
export function percentiles(values: number[]): Percentiles | null {
  if (values.length === 0) return null;
  const sorted = Float64Array.from(values).sort();
  const at = (q: number) => round(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!);
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    n: sorted.length,
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    mean: round(sum / sorted.length),
    max: round(sorted[sorted.length - 1]!),
  };
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** Adds one to `counts[key]`. */
export function count(counts: Record<string, number>, key: string, n = 1): void {
  counts[key] = (counts[key] ?? 0) + n;
}

/** The client's side of a run: offered, completed, refusals, latencies, per group. */
export function clientStats(
  attempts: readonly Attempt[],
  requests: readonly RequestRecord[],
  groupNames: readonly string[],
): Pick<
  RunStats,
  | "offered"
  | "attempts"
  | "completed"
  | "refused"
  | "failed_attempts"
  | "latency_ms"
  | "end_to_end_ms"
  | "queue_wait_ms"
  | "refusal_ms"
  | "sluice_refusals"
  | "refusals_with_sizing_headers"
  | "bytes_mismatches"
  | "groups"
> {
  const failed: Record<string, number> = {};
  const latency: number[] = [];
  const queue: number[] = [];
  const refusalMs: number[] = [];
  let sized = 0;
  let mismatches = 0;
  const groupLatency = groupNames.map(() => [] as number[]);
  const groupFailed = groupNames.map(() => ({}) as Record<string, number>);
  const groupAttempts = groupNames.map(() => 0);
  const groupQueue = groupNames.map(() => [] as number[]);
  const groupWait = groupNames.map(() => [] as number[]);
  for (const a of attempts) {
    groupAttempts[a.group]!++;
    groupWait[a.group]!.push(a.ms);
    if (a.code === "ok") {
      latency.push(a.ms);
      groupLatency[a.group]!.push(a.ms);
      if (a.queueMs >= 0) {
        queue.push(a.queueMs);
        groupQueue[a.group]!.push(a.queueMs);
      }
      continue;
    }
    count(failed, a.code);
    count(groupFailed[a.group]!, a.code);
    if (a.code === "bytes_mismatch") mismatches++;
    if (a.sluiceRefusal) {
      refusalMs.push(a.ms);
      if (a.sized) sized++;
    }
  }
  const refused: Record<string, number> = {};
  const endToEnd: number[] = [];
  const groups: Record<string, GroupStats> = {};
  const perGroup = groupNames.map(() => ({
    offered: 0,
    completed: 0,
    refused: {} as Record<string, number>,
    /** Each wave's requests: whether all of them completed so far. */
    waves: new Map<number, boolean>(),
  }));
  for (const r of requests) {
    const g = perGroup[r.group]!;
    g.offered++;
    if (r.wave !== undefined) g.waves.set(r.wave, (g.waves.get(r.wave) ?? true) && r.code === "ok");
    if (r.code === "ok") {
      g.completed++;
      endToEnd.push(r.endMs - r.startMs);
    } else {
      count(refused, r.code);
      count(g.refused, r.code);
    }
  }
  groupNames.forEach((name, i) => {
    const g = perGroup[i]!;
    groups[name] = {
      offered: g.offered,
      attempts: groupAttempts[i]!,
      completed: g.completed,
      success_rate: g.offered === 0 ? 1 : g.completed / g.offered,
      refused: g.refused,
      failed_attempts: groupFailed[i]!,
      latency_ms: percentiles(groupLatency[i]!),
      queue_wait_ms: percentiles(groupQueue[i]!),
      wait_ms: percentiles(groupWait[i]!),
      ...(g.waves.size === 0
        ? {}
        : { waves: { offered: g.waves.size, completed: [...g.waves.values()].filter(Boolean).length } }),
    };
  });
  return {
    offered: requests.length,
    attempts: attempts.length,
    completed: endToEnd.length,
    refused,
    failed_attempts: failed,
    latency_ms: percentiles(latency),
    end_to_end_ms: percentiles(endToEnd),
    queue_wait_ms: percentiles(queue),
    refusal_ms: percentiles(refusalMs),
    sluice_refusals: refusalMs.length,
    refusals_with_sizing_headers: sized,
    bytes_mismatches: mismatches,
    groups,
  };
}
