/**
 * Holding a shared rate budget for another lane's better waiter (DESIGN §1), taken out of the
 * scheduler's pass (scheduler.ts) so that file keeps to one job.
 */
import type { Lane } from "./lane.js";
import type { Ticket } from "./lease.js";
import type { Path } from "./path.js";
import { effectiveRank } from "./priority.js";

/**
 * A rate budget keeps its refill for the best waiter it cannot cover yet (DESIGN §1: waiters are
 * served by effective class, then arrival): true when a waiter of another lane in `waiting`,
 * better than (`rank`, `arrivedAt`), is held up by a metered budget on `path`. Without this, small
 * calls of one model would keep an account's bucket low and a large call of another would never
 * fit. Holding costs no capacity: tokens not taken stay in the bucket for the waiter that needs
 * them. A lane is as good as its candidate's class's oldest waiter (the candidate itself unless
 * flows share the class, fair-queue.ts), as in the pass.
 */
export function heldForAnother(
  waiting: ReadonlySet<Lane<Ticket>>,
  path: Path,
  rank: number,
  arrivedAt: number,
  nowMs: number,
  own: Lane<Ticket>,
): boolean {
  if (path.metered.length === 0 || waiting.size === 0) return false;
  for (const lane of waiting) {
    if (lane === own || lane.metered.length === 0) continue;
    const c = lane.candidate(nowMs);
    if (c === null) continue;
    const o = lane.queue.head(c.rank) ?? c;
    const r = effectiveRank(o.rank, o.arrivedAt, nowMs, lane.settings.agingMs);
    if (r > rank || (r === rank && o.arrivedAt >= arrivedAt)) continue;
    for (const b of lane.metered)
      if (path.metered.includes(b) && !b.hasRoom(c.rank, c.tokens, nowMs)) return true;
  }
  return false;
}
