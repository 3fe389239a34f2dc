/**
 * The rules a lane applies to an arrival that cannot be granted now (DESIGN §1.1), each written
 * once: say no at once when a token or request budget can never cover the call or not within the
 * queue timeout, when the expected wait already exceeds the queue timeout, and when the queue is
 * full shed the newest waiter of a lower class — or refuse the arrival if there is none.
 */
import { type ArrivalBudget, reserveFor } from "./budget.js";
import { KeyLimitError, QueueFullError, RateLimitError } from "./errors.js";
import type { Lane } from "./lane.js";
import { BULK, type Rank } from "./priority.js";
import { bucketsOf } from "./rate-limits.js";
import { MINUTE_MS, refillMs } from "./refill.js";
import { expectedWaitMs, retryAfterFloor, retryAfterMs } from "./retry-after.js";
import type { QueueNode } from "./wait-queue.js";

/** Releases measured before the expected-wait rule trusts the lane's drain rate. */
export const MIN_HOLD_SAMPLES = 5;

/** True when a waiter at `position` would only run into the queue timeout. */
export function waitExceedsTimeout(lane: Lane, position: number): boolean {
  if (lane.hold.samples < MIN_HOLD_SAMPLES) return false;
  const expected = expectedWaitMs(position, lane.width, lane.hold);
  return expected !== undefined && expected > lane.settings.queueTimeoutMs;
}

/**
 * Who leaves a full queue to make room for a waiter of class `rank` that arrived at `arrivedAt`:
 * the newest waiter of a lower class; with `keepsPlace` (a re-dispatched call waiting again,
 * admitted before the others) also the newest of its own class that arrived no earlier.
 * Null when nobody may be shed.
 */
export function shedVictim<T extends QueueNode>(
  lane: Lane<T>,
  rank: Rank,
  arrivedAt: number,
  keepsPlace = false,
): T | null {
  const below = lane.queue.newestBelow(rank);
  if (below !== null || !keepsPlace) return below;
  const newer = lane.queue.tail(rank);
  return newer !== null && newer.arrivedAt >= arrivedAt ? newer : null;
}

/**
 * The queue-full refusal for a caller of class `rank` at `position`, with the lane's numbers, a
 * Retry-After from its drain rate, and the free slots its class may not use (the reserve).
 */
export function queueFull(
  lane: Lane,
  position: number,
  reason: QueueFullError["reason"],
  rank: Rank,
): QueueFullError {
  const width = lane.width;
  const free = Math.max(0, width - lane.inflight);
  const reserved = Math.min(free, reserveFor(rank, lane.budget.reserve));
  return new QueueFullError(
    lane.name,
    lane.inflight,
    lane.queue.size,
    lane.settings.queueLimit,
    width,
    retryAfterMs(position, width, lane.hold),
    reason,
    reserved,
  );
}

/** The refusal for a key at its in flight + queued bound. */
export function keyLimit(key: ArrivalBudget, lane: Lane): KeyLimitError {
  return new KeyLimitError(
    key.name,
    key.inflight,
    key.queued,
    key.limit,
    retryAfterMs(key.queued + 1, lane.width, lane.hold),
    key.elsewhere,
  );
}

/**
 * The refusal an arrival of estimate `cost` gets from its key, or null: the key's in flight +
 * queued bound, then its (and its tenant's) token and request buckets (`key-meter.ts`).
 */
export function keyRefusal(
  key: ArrivalBudget | null,
  lane: Lane,
  cost: number,
  nowMs: number,
): KeyLimitError | RateLimitError | null {
  if (key === null) return null;
  if (key.full) return keyLimit(key, lane);
  return key.meter === undefined ? null : key.meter.refusal(lane.name, cost, nowMs);
}

/**
 * The refusal a call with token estimate `cost` and own class `rank` gets from its lane's token and
 * request budgets now, or null. A call that is not interactive must leave each bucket's
 * interactive reserve (`RateBudget.needs`): its estimate plus that reserve above a bucket's
 * capacity never fits (Retry-After a full minute: only a smaller request, or the interactive
 * class, helps). A call that may not wait (`canWait` false) is refused whenever the bucket cannot
 * cover it now. One that may wait is refused when the refill cannot cover it, the reserve it must
 * leave and the waiters queued ahead of it (their estimates, or one request each) within the
 * lane's queue timeout: Retry-After = that refill time. Waiters of other lanes sharing an
 * account's bucket are not counted; the queue timeout still bounds their effect.
 */
export function rateRefusal(
  lane: Lane,
  cost: number,
  nowMs: number,
  canWait: boolean,
  rank: Rank = BULK,
): RateLimitError | null {
  for (const budget of lane.metered) {
    for (const bucket of bucketsOf(budget)) {
      const needed = bucket.amount(cost);
      const floor = bucket.floorFor(rank);
      const refusal = (retryMs: number, reason: RateLimitError["reason"]) =>
        new RateLimitError(
          lane.name,
          bucket.name,
          bucket.unit,
          needed,
          bucket.perMinute,
          Math.floor(bucket.levelAt(nowMs)),
          retryAfterFloor(retryMs),
          reason,
          floor,
        );
      if (needed + floor > bucket.perMinute) return refusal(MINUTE_MS, "exceeds_capacity");
      const waitMs = bucket.readyAt(needed + floor) - nowMs;
      if (!canWait) {
        if (waitMs > 0) return refusal(waitMs, "no_wait");
        continue;
      }
      const ahead =
        bucket.unit === "tokens" ? tokensAhead(lane, rank) : lane.queue.positionForArrival(rank) - 1;
      const behindOthersMs = refillMs(ahead + needed + floor - bucket.levelAt(nowMs), bucket.perMinute);
      const coverMs = Math.max(waitMs, behindOthersMs);
      // At the timeout itself the waiter is expired before the pass that would grant it.
      if (coverMs >= lane.settings.queueTimeoutMs) return refusal(coverMs, "cannot_cover_in_time");
    }
  }
  return null;
}

/** The token estimates of the waiters a new arrival of class `rank` queues behind. */
function tokensAhead(lane: Lane, rank: Rank): number {
  let sum = 0;
  for (let r = 0; r <= rank; r++) sum += lane.queuedTokens[r as Rank];
  return sum;
}
