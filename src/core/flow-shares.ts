/**
 * Each flow's part of a lane (issue 24: "its share of the lane"): for the keys and tenants with
 * calls waiting or running on a lane, what they hold against what their weight entitles them to,
 * so an operator sees that tenant A holds 78 % of the slots while its share is 50 % because
 * tenant B offers less (fair queuing is work-conserving: a flow that offers less leaves its part
 * to the others). Computed only when a snapshot is read: the grant path pays one integer
 * increment on the key (`ArrivalBudget.granted`), the queue already counts waiters by flow.
 */
import type { ArrivalBudget } from "./budget.js";
import type { Flow } from "./fair-queue.js";
import type { Lane } from "./lane.js";

/** One flow (a key, a tenant, or the calls with no configured key) on one lane. */
export interface FlowShareSnapshot {
  /** `tenant:NAME`, `key:ID`, or `anonymous` (calls with no configured key, weight 1). */
  flow: string;
  /** Its calls in flight on the lane (this replica's). */
  inflight: number;
  /** Its calls waiting in the lane's queue. */
  queued: number;
  /** Its configured weight. */
  weight: number;
  /** Its configured share: its weight ÷ the weights of the flows listed here (active on the lane), 0..1. */
  share: number;
  /** What it holds: its in flight ÷ the lane's in flight (0 while nothing runs), 0..1. */
  used: number;
}

/** The name calls with no configured key are listed under. */
export const ANONYMOUS_FLOW = "anonymous";

const ratio = (n: number, d: number): number => (d > 0 ? Math.round((n / d) * 1000) / 1000 : 0);

/**
 * The flows active on `lane` (in flight or queued), with their shares; undefined when no
 * configured key's call is waiting or running there (the lane then has nothing to share out).
 * `keys` are the configured keys; a call whose key is not among them counts as anonymous.
 */
export function laneFlows(lane: Lane, keys: Iterable<ArrivalBudget>): FlowShareSnapshot[] | undefined {
  const inflight = new Map<Flow, number>();
  let keyed = 0;
  for (const k of keys) {
    if (k.flow === null) continue; // waits and runs as anonymous
    const n = k.inflightOn(lane.slot);
    inflight.set(k.flow, (inflight.get(k.flow) ?? 0) + n);
    keyed += n;
  }
  const active: { flow: string; inflight: number; queued: number; weight: number }[] = [];
  for (const [flow, n] of inflight) {
    const queued = lane.queue.countOf(flow);
    if (n + queued > 0) active.push({ flow: flow.name, inflight: n, queued, weight: flow.weight });
  }
  if (active.length === 0) return undefined;
  active.sort((a, b) => (a.flow < b.flow ? -1 : a.flow > b.flow ? 1 : 0));
  const anonymous = { flow: ANONYMOUS_FLOW, inflight: 0, queued: lane.queue.countOf(null), weight: 1 };
  anonymous.inflight = Math.max(0, lane.inflight - keyed);
  if (anonymous.inflight + anonymous.queued > 0) active.push(anonymous);
  let weights = 0;
  let running = 0;
  for (const f of active) {
    weights += f.weight;
    running += f.inflight;
  }
  return active.map((f) => ({ ...f, share: ratio(f.weight, weights), used: ratio(f.inflight, running) }));
}
