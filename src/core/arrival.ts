/**
 * The rules a lane applies to an arrival that cannot be granted now (DESIGN §1.1), each written
 * once: say no at once when the expected wait already exceeds the queue timeout, and when the
 * queue is full shed the newest waiter of a lower class — or refuse the arrival if there is none.
 */
import type { ArrivalBudget } from "./budget.js";
import { KeyLimitError, QueueFullError } from "./errors.js";
import type { Lane } from "./lane.js";
import type { Rank } from "./priority.js";
import { expectedWaitMs, retryAfterMs } from "./retry-after.js";
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

/** The queue-full refusal for a caller at `position`, with the lane's numbers and a Retry-After from its drain rate. */
export function queueFull(lane: Lane, position: number, reason: QueueFullError["reason"]): QueueFullError {
  const width = lane.width;
  return new QueueFullError(
    lane.name,
    lane.inflight,
    lane.queue.size,
    lane.settings.queueLimit,
    width,
    retryAfterMs(position, width, lane.hold),
    reason,
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
  );
}
