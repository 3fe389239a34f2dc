/**
 * Reads the ledger against the faults and their bounds: every start at the pods that left a budget
 * above its limit (and which fault's window was open then, and what that fault allows), every call
 * that waited at a gateway while the pods had room for it for longer than a heartbeat, and every
 * call a pod ran twice. Pure: data in, findings out; the test and the soak decide what fails.
 */
import type { AtFault, FaultBound } from "./bounds.js";
import type { FaultKind, FaultRecord } from "./faults.js";
import type { CallRecord, Gauge, Ledger } from "./ledger.js";
import type { FleetShape } from "./shape.js";

export type Cause = FaultKind | "steady";

/** A start at the pods that left a budget above its limit. */
export interface Overshoot {
  readonly gauge: string;
  readonly limit: number;
  /** The budget's count at the pods right after the start. */
  readonly seen: number;
  readonly at: number;
  /** How long the count stayed above the limit from this start on, ms. */
  readonly ms: number;
  /** The faults whose window was open at the start (none: "steady"), and the most they allow. */
  readonly causes: Cause[];
  readonly allowed: number;
  /** Whether those faults were still in force or lifted (settling, within their window). */
  readonly phase: "steady" | "during" | "after";
}

export interface CauseSummary {
  /** Largest excess over a limit a start left while this cause's window was open, and on which budget. */
  maxExcess: number;
  gauge: string;
  /** The most this cause allows on that budget. */
  allowed: number;
  /** Time spent over a limit in stretches that began while its window was open, ms. */
  overMs: number;
  /** Starts past its allowance. */
  violations: Overshoot[];
}

export interface StuckWaiter {
  readonly call: string;
  readonly replica: number;
  readonly priority: string;
  /** The longest stretch it waited while the pods had room for it and no fault excused it, ms. */
  readonly roomMs: number;
  readonly from: number;
}

interface Window {
  readonly kind: FaultKind;
  readonly start: number;
  readonly lifted: number;
  readonly end: number;
  readonly bound: FaultBound;
  readonly at: AtFault;
}

/** Grants on their way when a fault began reach the pods within this (the dispatch after Redis's answer). */
const GRANT_TO_POD_MS = 100;

/** Each fault's window, with what the ledger says about the moment it began. */
export function windowsOf(
  faults: readonly FaultRecord[],
  bounds: Record<FaultKind, FaultBound>,
  ledger: Ledger,
  heartbeatMs: number,
): Window[] {
  return faults.map((f) => {
    const bound = bounds[f.kind];
    const end = f.liftedAt + bound.afterMs;
    const recent: Record<string, number> = {};
    for (const g of ledger.gauges.values()) {
      let starts = 0;
      let last = g.valueAt(f.startAt - heartbeatMs);
      for (const [, v] of g.between(f.startAt - heartbeatMs, f.startAt + GRANT_TO_POD_MS)) {
        if (v > last) starts += v - last;
        last = v;
      }
      recent[g.name] = starts;
    }
    return { kind: f.kind, start: f.startAt, lifted: f.liftedAt, end, bound, at: { held: f.held, recent } };
  });
}

/**
 * Every start at the pods that left a budget above its limit, with the faults whose window was
 * open then and what they allow; and a summary per cause. A call already running is never cut,
 * so what counts is the start: calls started within an allowance may run on after the window.
 */
export function overshoots(
  ledger: Ledger,
  windows: readonly Window[],
): { stretches: Overshoot[]; byCause: Map<Cause, CauseSummary> } {
  const stretches: Overshoot[] = [];
  const byCause = new Map<Cause, CauseSummary>();
  for (const gauge of ledger.gauges.values()) {
    const { times, values } = gauge;
    for (let i = 1; i < times.length; i++) {
      const seen = values[i]!;
      if (seen <= gauge.limit || seen <= values[i - 1]!) continue; // only a start that lands over
      const t = times[i]!;
      const open = windows.filter((w) => t >= w.start && t < w.end);
      const allowed = open.reduce((m, w) => Math.max(m, w.bound.over(gauge, w.at)), 0);
      const causes: Cause[] = open.length === 0 ? ["steady"] : open.map((w) => w.kind);
      const phase = open.length === 0 ? "steady" : open.some((w) => t < w.lifted) ? "during" : "after";
      const ms = overFrom(gauge, i) - t;
      const stretch: Overshoot = {
        gauge: gauge.name,
        limit: gauge.limit,
        seen,
        at: t,
        ms,
        causes,
        allowed,
        phase,
      };
      stretches.push(stretch);
      const excess = seen - gauge.limit;
      const rose = values[i - 1]! <= gauge.limit; // this start began a stretch over the limit
      for (const cause of causes) {
        const s = summaryOf(byCause, cause);
        if (rose) s.overMs += ms;
        if (excess > s.maxExcess) {
          s.maxExcess = excess;
          s.gauge = gauge.name;
          s.allowed = allowed;
        }
        if (excess > allowed) s.violations.push(stretch);
      }
    }
  }
  return { stretches, byCause };
}

/** When the count, over its limit at change `i`, next came down to it (or its last change). */
function overFrom(gauge: Gauge, i: number): number {
  for (let j = i + 1; j < gauge.times.length; j++)
    if (gauge.values[j]! <= gauge.limit) return gauge.times[j]!;
  return gauge.times.at(-1)!;
}

function summaryOf(map: Map<Cause, CauseSummary>, cause: Cause): CauseSummary {
  let s = map.get(cause);
  if (s === undefined) {
    s = { maxExcess: 0, gauge: "", allowed: 0, overMs: 0, violations: [] };
    map.set(cause, s);
  }
  return s;
}

/**
 * Calls that waited at a gateway longer than `thresholdMs` in one stretch while the pods had room
 * for them (the lane below its limit — below limit − reserve for a class other than interactive
 * — and some pod below its own) and no fault that excuses waiting was in force.
 */
export function stuckWaiters(
  ledger: Ledger,
  shape: FleetShape,
  windows: readonly Window[],
  thresholdMs: number,
): StuckWaiter[] {
  const lane = ledger.gauges.get("lane")!;
  const pods = [...ledger.gauges.values()].filter((g) => g.name.startsWith("pod:"));
  const excused = windows.filter((w) => w.bound.waitersExempt);
  const stuck: StuckWaiter[] = [];
  for (const call of ledger.calls.values()) {
    const until = call.podStartAt ?? (call.end === "connection" ? undefined : call.endedAt);
    if (until === undefined || until - call.sentAt <= thresholdMs) continue;
    const room = roomStretch(call, until, lane, pods, shape, excused);
    if (room.ms > thresholdMs)
      stuck.push({
        call: call.id,
        replica: call.replica,
        priority: call.priority,
        roomMs: room.ms,
        from: room.from,
      });
  }
  return stuck;
}

function roomStretch(
  call: CallRecord,
  until: number,
  lane: Gauge,
  pods: readonly Gauge[],
  shape: FleetShape,
  excused: readonly Window[],
): { ms: number; from: number } {
  const laneRoom = call.priority === "interactive" ? shape.laneLimit : shape.laneLimit - shape.reserve;
  const times = new Set<number>([call.sentAt]);
  for (const g of [lane, ...pods]) for (const [t] of g.between(call.sentAt, until)) times.add(t);
  for (const w of excused) for (const t of [w.start, w.end]) if (t > call.sentAt && t < until) times.add(t);
  const sorted = [...times].sort((a, b) => a - b);
  let best = { ms: 0, from: call.sentAt };
  let openedAt: number | undefined;
  for (const t of sorted) {
    const hasRoom =
      lane.valueAt(t) < laneRoom &&
      pods.some((p) => p.valueAt(t) < p.limit) &&
      !excused.some((w) => t >= w.start && t < w.end);
    if (hasRoom && openedAt === undefined) openedAt = t;
    if (!hasRoom && openedAt !== undefined) {
      if (t - openedAt > best.ms) best = { ms: t - openedAt, from: openedAt };
      openedAt = undefined;
    }
  }
  if (openedAt !== undefined && until - openedAt > best.ms) best = { ms: until - openedAt, from: openedAt };
  return best;
}
