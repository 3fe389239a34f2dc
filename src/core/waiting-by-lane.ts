/**
 * What a process advertises of its lanes' waiters to a fleet store (`Store.watchWaiters`), read
 * off the lanes' queues and the grants being confirmed. Apart from lane-waiting.ts, whose types
 * the store contract names: this reads lanes, and a lane's module reaches the contract.
 */
import { ANONYMOUS, type Flow } from "./fair-queue.js";
import type { Lane } from "./lane.js";
import type { ClassCounts, FlowCounts, LaneWaiting } from "./lane-waiting.js";
import type { Ticket } from "./lease.js";
import { effectiveRank, type Rank } from "./priority.js";

/**
 * What a process waits for on each lane's budget, per effective class (aging included), and the
 * flows those waiters belong to: queued calls, plus the grants still being confirmed with the
 * fleet (they wait until Redis says yes, and counting them keeps the advertisement steady while a
 * grant is asked).
 */
export function* waitingByLane(
  lanes: Iterable<Lane<Ticket>>,
  confirming: Iterable<Ticket>,
  nowMs: number,
): Iterable<LaneWaiting> {
  const pending = new Map<Lane<Ticket>, { counts: ClassCounts; flows: FlowCounts }>();
  for (const t of confirming) {
    let p = pending.get(t.laneRef);
    if (p === undefined) {
      p = { counts: [0, 0, 0], flows: noFlows() };
      pending.set(t.laneRef, p);
    }
    const eff = effectiveRank(t.rank, t.arrivedAt, nowMs, t.laneRef.settings.agingMs);
    p.counts[eff]! += 1;
    bump(p.flows[eff]!, t.flow ?? ANONYMOUS, 1);
  }
  for (const lane of lanes) {
    const { counts, flows } = pending.get(lane) ?? { counts: [0, 0, 0], flows: noFlows() };
    const queue = lane.queue;
    if (queue.size === 0 && counts[0] + counts[1] + counts[2] === 0) continue;
    for (let r = 0; r <= 2; r++) {
      const rank = r as Rank;
      if (queue.count(rank) === 0) continue;
      let aged = 0;
      let agedOf: Map<Flow, number> | null = null;
      // Each class's list is in arrival order, so its aged waiters are a prefix of it.
      for (const n of queue.waiting(rank)) {
        const eff = effectiveRank(n.rank, n.arrivedAt, nowMs, lane.settings.agingMs);
        if (eff === rank) break;
        counts[eff]! += 1;
        aged++;
        const flow = n.flow ?? ANONYMOUS;
        bump(flows[eff]!, flow, 1);
        agedOf ??= new Map();
        bump(agedOf, flow, 1);
      }
      counts[rank] += queue.count(rank) - aged;
      for (const [flow, n] of queue.flowCounts(rank)) {
        const left = n - (agedOf?.get(flow) ?? 0);
        if (left > 0) bump(flows[rank], flow, left);
      }
    }
    yield { budget: lane.budget, counts, flows, queue };
  }
}

function noFlows(): FlowCounts {
  return [new Map(), new Map(), new Map()];
}

function bump(into: Map<Flow, number>, flow: Flow, n: number): void {
  into.set(flow, (into.get(flow) ?? 0) + n);
}
