/**
 * A run's receipt: the verdict's findings in one plain object (written as JSON by the soak, read
 * by the chaos test) and as a table for people. Every figure is counted at the pods or read from
 * Redis, /proc and the replicas' snapshots after the traffic stopped.
 */
import { type FaultBound, faultBounds } from "./bounds.js";
import { FAULT_KINDS } from "./faults.js";
import type { ChaosRun } from "./session.js";
import { heartbeatMs } from "./shape.js";
import {
  type Cause,
  type Overshoot,
  overshoots,
  type StuckWaiter,
  stuckWaiters,
  windowsOf,
} from "./verdict.js";

/**
 * A waiter counts as stuck past one heartbeat plus this: the time from a call ending at the pod
 * to another replica's grant reaching the pod (the answer forwarded, the release sent, the other
 * replica woken, its grant confirmed, the call sent) on a machine whose cores other work shares.
 */
export const STUCK_SLACK_MS = 1000;
/** The most a replica's resident memory may reach (node + tsx on src/: 90–160 MB seen in these runs). */
export const RSS_LIMIT_BYTES = 320 * 1024 * 1024;

export interface CauseLine {
  readonly cause: Cause;
  readonly injected: number;
  readonly maxExcess: number;
  readonly gauge: string;
  /** The most the bound allows on that budget (during or after the fault). */
  readonly allowed: number;
  readonly overMs: number;
  readonly violations: Violation[];
  readonly documented: boolean;
  readonly source: string;
}

/** A stretch over a fault's bound, placed in the run: seconds from the traffic's start, and the last fault before it. */
export type Violation = Overshoot & { readonly atS: number; readonly after: string };

export interface Receipt {
  readonly seed: number;
  readonly replicas: number;
  readonly trafficS: number;
  readonly calls: number;
  readonly callsByEnd: Record<string, number>;
  readonly refusals: Record<string, number>;
  readonly peaks: Record<string, { peak: number; limit: number }>;
  /** From sending to the start at a pod, for the calls that ran: median, 99th percentile, most (ms). */
  readonly waits: { p50Ms: number; p99Ms: number; maxMs: number };
  /** Calls that ran at a pod, per replica slot they were sent to. */
  readonly ranByReplica: number[];
  readonly causes: CauseLine[];
  readonly stuck: StuckWaiter[];
  readonly stuckSeconds: number;
  readonly stuckThresholdMs: number;
  readonly runTwice: Array<{ id: string; pods: string[] }>;
  /** Replica processes that exited without the harness killing them, with their last output. */
  readonly crashes: string[];
  readonly unknownRuns: number;
  readonly redisLeft: ChaosRun["redisLeft"];
  readonly replicasLeft: ChaosRun["replicasLeft"];
  readonly settledMs: number;
  /** Per replica: VmRSS MB at the start, the peak and the end, and samples every ~10 s. */
  readonly rss: Array<{
    replica: number;
    firstMb: number;
    peakMb: number;
    lastMb: number;
    everyTenS: number[];
  }>;
  readonly faults: Array<{ at_s: number; kind: string; detail: string }>;
}

export function receiptOf(run: ChaosRun): Receipt {
  const bounds: Record<string, FaultBound> = faultBounds(run.shape);
  const windows = windowsOf(run.faults, faultBounds(run.shape), run.ledger, heartbeatMs(run.shape));
  const { byCause } = overshoots(run.ledger, windows);
  const threshold = heartbeatMs(run.shape) + STUCK_SLACK_MS;
  const stuck = stuckWaiters(run.ledger, run.shape, windows, threshold);
  const count = (values: string[]) => {
    const out: Record<string, number> = {};
    for (const v of values) out[v] = (out[v] ?? 0) + 1;
    return out;
  };
  const calls = [...run.ledger.calls.values()];
  const causes: CauseLine[] = (["steady", ...FAULT_KINDS] as Cause[]).map((cause) => {
    const s = byCause.get(cause);
    const b = cause === "steady" ? undefined : bounds[cause];
    return {
      cause,
      injected: cause === "steady" ? 0 : run.faults.filter((f) => f.kind === cause).length,
      maxExcess: s?.maxExcess ?? 0,
      gauge: s?.gauge ?? "",
      allowed: s?.allowed ?? 0,
      overMs: Math.round(s?.overMs ?? 0),
      violations: (s?.violations ?? []).map((v) => placed(v, run)),
      documented: b?.documented ?? true,
      source: b?.source ?? "no fault in force: every budget at or below its limit",
    };
  });
  const mb = (b: number) => Math.round(b / 1048576);
  return {
    seed: run.seed,
    replicas: run.shape.replicas,
    trafficS: Math.round((run.trafficTo - run.trafficFrom) / 100) / 10,
    calls: calls.length,
    callsByEnd: count(calls.map((c) => c.end ?? "unended")),
    refusals: count(calls.flatMap((c) => (c.end === "refused" ? [c.status ?? "?"] : []))),
    peaks: Object.fromEntries(
      [...run.ledger.gauges.values()].map((g) => [g.name, { peak: g.peak, limit: g.limit }]),
    ),
    waits: percentiles(calls.flatMap((c) => (c.podStartAt === undefined ? [] : [c.podStartAt - c.sentAt]))),
    ranByReplica: Array.from(
      { length: run.shape.replicas },
      (_, i) => calls.filter((c) => c.replica === i && c.runs > 0).length,
    ),
    causes,
    stuck,
    stuckSeconds: Math.round(stuck.reduce((s, w) => s + (w.roomMs - heartbeatMs(run.shape)), 0) / 100) / 10,
    stuckThresholdMs: threshold,
    runTwice: run.ledger.twice,
    crashes: run.crashes,
    unknownRuns: run.ledger.unknownRuns,
    redisLeft: run.redisLeft,
    replicasLeft: run.replicasLeft,
    settledMs: Math.round(run.settledMs),
    rss: run.rss.map((samples, replica) => ({
      replica,
      firstMb: mb(samples[0]?.[1] ?? 0),
      peakMb: mb(samples.reduce((m, [, b]) => Math.max(m, b), 0)),
      lastMb: mb(samples.at(-1)?.[1] ?? 0),
      everyTenS: tenSecondSamples(samples, run.trafficFrom).map(mb),
    })),
    faults: run.faults.map((f) => ({
      at_s: Math.round((f.startAt - run.trafficFrom) / 100) / 10,
      kind: f.kind,
      detail: f.detail,
    })),
  };
}

function percentiles(ms: number[]): Receipt["waits"] {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);
  return { p50Ms: at(0.5), p99Ms: at(0.99), maxMs: Math.round(sorted.at(-1) ?? 0) };
}

function placed(v: Overshoot, run: ChaosRun): Violation {
  const before = run.faults.filter((f) => f.startAt <= v.at).at(-1);
  const atS = Math.round((v.at - run.trafficFrom) / 100) / 10;
  if (before === undefined) return { ...v, atS, after: "no fault yet" };
  const since = Math.round(v.at - before.liftedAt);
  return { ...v, atS, after: `${before.kind} (${before.detail}), lifted ${since} ms before` };
}

function tenSecondSamples(samples: Array<[number, number]>, from: number): number[] {
  const out: number[] = [];
  for (const [t, b] of samples) {
    const slot = Math.floor((t - from) / 10_000);
    if (slot >= 0 && out[slot] === undefined) out[slot] = b;
  }
  return out.filter((b) => b !== undefined);
}

/** The receipt as a table for people. */
export function receiptTable(r: Receipt): string {
  const lines: string[] = [];
  lines.push(
    `chaos seed ${r.seed} (replay: CHAOS_SEED=${r.seed}), ${r.replicas} replicas, ${r.trafficS} s of traffic, ${r.calls} calls`,
  );
  lines.push(`  ends: ${fmt(r.callsByEnd)}   refusals: ${fmt(r.refusals) || "none"}`);
  lines.push(
    `  peaks at the pods: ${Object.entries(r.peaks)
      .map(([g, p]) => `${g} ${p.peak}/${p.limit}`)
      .join(", ")}`,
  );
  lines.push(
    `  wait before the pod: p50 ${r.waits.p50Ms} ms, p99 ${r.waits.p99Ms} ms, max ${r.waits.maxMs} ms; ran per replica: ${r.ranByReplica.join(" / ")}`,
  );
  lines.push("");
  lines.push(
    "  fault              injected  most over a limit (a start)  bound  time over (ms)  violations  bound written",
  );
  for (const c of r.causes) {
    lines.push(
      `  ${c.cause.padEnd(18)} ${String(c.injected).padStart(8)}  ${`${c.maxExcess}${c.gauge ? ` (${c.gauge})` : ""}`.padStart(27)}  ${String(c.allowed).padStart(5)}  ${String(c.overMs).padStart(14)}  ${String(c.violations.length).padStart(10)}  ${c.documented ? "yes" : "NO"}`,
    );
  }
  lines.push("");
  lines.push(
    `  stuck waiters (room at the pods for > ${r.stuckThresholdMs} ms, no fault excusing): ${r.stuck.length}, ${r.stuckSeconds} s past the heartbeat`,
  );
  lines.push(
    `  calls run twice: ${r.runTwice.length}   runs of unknown calls: ${r.unknownRuns}   replicas that died by themselves: ${r.crashes.length}`,
  );
  const redisLeft = Object.entries(r.redisLeft.counted).map(([k, n]) => `${k}=${n}`);
  lines.push(
    `  left in Redis after stop: ${redisLeft.join(", ") || "nothing"}${r.redisLeft.waiting.length ? `; waiting: ${r.redisLeft.waiting.join(", ")}` : ""} (read ${r.settledMs} ms after the traffic)`,
  );
  const replicaLeft = r.replicasLeft
    .filter((x) => x.counted.length > 0)
    .map((x) => `replica ${x.replica}: ${x.counted.join("; ")}`);
  lines.push(`  left in the replicas: ${replicaLeft.join(" | ") || "nothing"}`);
  for (const m of r.rss)
    lines.push(
      `  replica ${m.replica} RSS MB: first ${m.firstMb}, peak ${m.peakMb}, last ${m.lastMb}; every 10 s: ${m.everyTenS.join(" ")}`,
    );
  lines.push("");
  lines.push("  faults:");
  for (const f of r.faults)
    lines.push(`    ${String(f.at_s).padStart(6)} s  ${f.kind.padEnd(16)} ${f.detail}`);
  return lines.join("\n");
}

const fmt = (o: Record<string, number>) =>
  Object.entries(o)
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
