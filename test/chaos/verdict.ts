/**
 * Reads the ledger against the faults and their bounds: every moment a budget was above its
 * limit at the pods (and which fault was in force then, and what that fault allows), every call
 * that waited at a gateway while the pods had room for it for longer than a heartbeat, and every
 * call a pod ran twice. Pure: data in, findings out; the test and the soak decide what fails.
 */
import type { FaultBound } from "./bounds.js";
import type { FaultKind, FaultRecord } from "./faults.js";
import type { CallRecord, Gauge, Ledger } from "./ledger.js";
import type { FleetShape } from "./shape.js";

export type Cause = FaultKind | "steady";

/** A stretch of time a budget spent above its limit. */
export interface Overshoot {
  readonly gauge: string;
  readonly limit: number;
  readonly seen: number;
  readonly at: number;
  readonly ms: number;
  /** The faults in force then (none: "steady"), and the most they allow above the limit. */
  readonly causes: Cause[];
  /** Whether those faults were still in force or lifted (within the time their bound lasts after). */
  readonly phase: "steady" | "during" | "after";
  readonly allowed: number;
}

export interface CauseSummary {
  /** Largest excess over a limit seen while this cause was in force, and on which budget. */
  maxExcess: number;
  gauge: string;
  /** The most this cause allows on that budget (during or after it). */
  allowed: number;
  /** Time spent over a limit while it was in force, ms. */
  overMs: number;
  /** Stretches over its allowance. */
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
}

export function windowsOf(faults: readonly FaultRecord[], bounds: Record<FaultKind, FaultBound>): Window[] {
  return faults.map((f) => {
    const bound = bounds[f.kind];
    return { kind: f.kind, start: f.startAt, lifted: f.liftedAt, end: f.liftedAt + bound.afterMs, bound };
  });
}

/** The windows in force at `t`, with what each allows on a budget of `limit` then. */
function inForce(windows: readonly Window[], t: number, limit: number): Array<[Window, number]> {
  const out: Array<[Window, number]> = [];
  for (const w of windows) {
    if (t < w.start || t >= w.end) continue;
    out.push([w, t < w.lifted ? w.bound.during(limit) : w.bound.after(limit)]);
  }
  return out;
}

/** Every stretch over a limit, on every budget, with its causes; and a summary per cause. */
export function overshoots(
  ledger: Ledger,
  windows: readonly Window[],
): { stretches: Overshoot[]; byCause: Map<Cause, CauseSummary> } {
  const stretches: Overshoot[] = [];
  const byCause = new Map<Cause, CauseSummary>();
  const edges = windows.flatMap((w) => [w.start, w.lifted, w.end]);
  for (const gauge of ledger.gauges.values()) {
    const times = [...new Set([...gauge.times, ...edges])].sort((a, b) => a - b);
    for (let i = 0; i < times.length; i++) {
      const t = times[i]!;
      const seen = gauge.valueAt(t);
      if (seen <= gauge.limit) continue;
      const ms = (times[i + 1] ?? t) - t;
      const forced = inForce(windows, t, gauge.limit);
      const causes: Cause[] = forced.length === 0 ? ["steady"] : forced.map(([w]) => w.kind);
      const allowed = forced.reduce((m, [, a]) => Math.max(m, a), 0);
      const phase = forced.length === 0 ? "steady" : forced.some(([w]) => t < w.lifted) ? "during" : "after";
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
      for (const cause of causes) {
        const s = summaryOf(byCause, cause);
        s.overMs += ms;
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
