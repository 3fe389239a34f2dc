/**
 * `--baseline FILE`: compares a run's receipt with an earlier one. It first says whether the
 * settings (`config_hash`) or the hardware changed — a different machine or config explains a
 * difference before a regression does (seed 003: "distinguish changed settings from changed
 * hardware") — and only when neither did does a worse number count as a regression.
 */
import { canonicalJson, type Receipt, sluiceRun } from "./receipt.js";
import type { Percentiles, RunStats } from "./stats.js";

/** One number compared. */
export interface Delta {
  metric: string;
  baseline: number | null;
  now: number | null;
  /** Worse beyond the tolerance. */
  worse: boolean;
}

export interface BaselineComparison {
  file: string;
  /** `comparable` is the only verdict under which a worse number is a regression. */
  verdict:
    | "comparable"
    | "settings changed"
    | "hardware changed"
    | "settings and hardware changed"
    | "different profile";
  settings_changed: string[];
  hardware_changed: string[];
  /** sluice version or commit: the change a regression is attributed to. */
  software_changed: string[];
  deltas: Delta[];
  /** Worse numbers and checks met before but not now; empty unless `comparable`. */
  regressions: string[];
}

/** What is compared: a metric, which way is better, and how much worse counts. */
interface Metric {
  name: string;
  get(r: RunStats): number | null | undefined;
  /** True when `now` is worse than `base` beyond noise. */
  worse(base: number, now: number): boolean;
}

const slower = (base: number, now: number) => now > base * 1.25 + 5;
const fewer = (base: number, now: number) => now < base * 0.95;
const more = (base: number, now: number) => now > base * 1.25 + 5;
const anyMore = (base: number, now: number) => now > base;
const pct = (p: (r: RunStats) => Percentiles | null, k: keyof Percentiles) => (r: RunStats) => p(r)?.[k];

const METRICS: Metric[] = [
  { name: "completed", get: (r) => r.completed, worse: fewer },
  { name: "latency_ms.mean", get: pct((r) => r.latency_ms, "mean"), worse: slower },
  { name: "latency_ms.p99", get: pct((r) => r.latency_ms, "p99"), worse: slower },
  { name: "queue_wait_ms.p99", get: pct((r) => r.queue_wait_ms, "p99"), worse: slower },
  { name: "refusal_ms.p99", get: pct((r) => r.refusal_ms, "p99"), worse: slower },
  { name: "utilization", get: (r) => r.utilization, worse: (b, n) => n < b - 0.02 },
  { name: "pod_refusals_after_warmup", get: (r) => r.pod_refusals_after_warmup, worse: more },
  { name: "oom_events", get: (r) => r.oom_events, worse: anyMore },
  { name: "leaked_reservations", get: (r) => r.leaked_reservations, worse: anyMore },
  { name: "bytes_mismatches", get: (r) => r.bytes_mismatches, worse: anyMore },
];

/** Compares `now` with `base` (read from `file`). */
export function compareReceipts(base: Receipt, now: Receipt, file: string): BaselineComparison {
  const empty = {
    file,
    settings_changed: [],
    hardware_changed: [],
    software_changed: [],
    deltas: [],
    regressions: [],
  };
  if (base.profile !== now.profile) return { ...empty, verdict: "different profile" };
  const settings =
    base.config_hash === now.config_hash ? [] : diffPaths(base.settings, now.settings, "settings");
  if (base.config_hash !== now.config_hash && settings.length === 0) settings.push("config_hash");
  const hardware = hardwareChanges(base, now);
  const softwareChanged: string[] = [];
  if (base.software?.sluice !== now.software?.sluice)
    softwareChanged.push(`sluice ${base.software?.sluice} → ${now.software?.sluice}`);
  if (base.software?.commit !== now.software?.commit)
    softwareChanged.push(`commit ${short(base.software?.commit)} → ${short(now.software?.commit)}`);
  const verdict: BaselineComparison["verdict"] =
    settings.length > 0 && hardware.length > 0
      ? "settings and hardware changed"
      : settings.length > 0
        ? "settings changed"
        : hardware.length > 0
          ? "hardware changed"
          : "comparable";
  const deltas: Delta[] = [];
  const runs: Array<[string, RunStats | null, RunStats | null]> = [
    ["sluice", sluiceRun(base), sluiceRun(now)],
    ["direct", base.direct, now.direct],
  ];
  for (const [label, b, n] of runs) {
    if (b === null || n === null) continue;
    for (const m of METRICS) {
      const bv = m.get(b) ?? null;
      const nv = m.get(n) ?? null;
      // Only the through-sluice run can regress: the direct run shows the incident, and more of it is not sluice's doing.
      const worse = label === "sluice" && bv !== null && nv !== null && m.worse(bv, nv);
      deltas.push({ metric: `${label}.${m.name}`, baseline: bv, now: nv, worse });
    }
  }
  const regressions: string[] = [];
  if (verdict === "comparable") {
    for (const d of deltas) if (d.worse) regressions.push(`${d.metric}: ${d.baseline} → ${d.now}`);
    for (const c of now.checks) {
      const before = base.checks?.find((b) => b.name === c.name);
      if (before?.met === true && !c.met)
        regressions.push(`check no longer met: ${c.name} (${before.value} → ${c.value})`);
    }
  }
  return {
    file,
    verdict,
    settings_changed: settings,
    hardware_changed: hardware,
    software_changed: softwareChanged,
    deltas,
    regressions,
  };
}

/** What differs between two hardware fingerprints (memory within 10 % is the same machine). */
function hardwareChanges(base: Receipt, now: Receipt): string[] {
  const b = base.hardware;
  const n = now.hardware;
  if (b === undefined || n === undefined) return ["hardware: not recorded"];
  const out: string[] = [];
  for (const k of ["cpu_model", "cores", "node", "platform", "arch"] as const) {
    if (b[k] !== n[k]) out.push(`${k}: ${b[k]} → ${n[k]}`);
  }
  if (Math.abs(b.memory_bytes - n.memory_bytes) > 0.1 * b.memory_bytes) {
    out.push(`memory: ${gib(b.memory_bytes)} → ${gib(n.memory_bytes)}`);
  }
  return out;
}

/** Paths at which two JSON values differ (at most 20), e.g. `settings.time_scale: 0.1 → 0.05`. */
export function diffPaths(a: unknown, b: unknown, path: string, out: string[] = []): string[] {
  if (out.length >= 20) return out;
  if (isObject(a) && isObject(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)]))
      diffPaths(a[k], b[k], `${path}.${k}`, out);
  } else if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    for (const [i, v] of a.entries()) diffPaths(v, b[i], `${path}[${i}]`, out);
  } else if (canonicalJson(a) !== canonicalJson(b)) {
    out.push(`${path}: ${brief(a)} → ${brief(b)}`);
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function brief(v: unknown): string {
  const s = v === undefined ? "(none)" : canonicalJson(v);
  return s.length > 60 ? `${s.slice(0, 57)}…` : s;
}

function short(commit: string | null | undefined): string {
  return commit ? commit.slice(0, 10) : "(none)";
}

function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}
