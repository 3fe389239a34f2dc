/**
 * Where a call goes when its lane cannot serve it: every pod tripped by its breaker, or every pod
 * held by a provider's quota pause.
 */
import { BreakerOpenError, QuotaPausedError, type SluiceError } from "../core/errors.js";
import type { Lane } from "../core/lane.js";
import type { Ticket } from "../core/lease.js";
import { retryAfterFloor } from "../core/retry-after.js";
import type { Scheduler } from "../core/scheduler.js";
import type { Registry } from "./registry.js";

/**
 * The lane a call for `lane` goes to now. A lane whose pods are all tripped, or all held by a
 * quota pause, sends its calls to its fallback lane. Without one: a quota pause is refused at once
 * (`QuotaPausedError`, Retry-After = the pause left: waiting would only run into the queue
 * timeout), tripped pods with `failFast` too (`BreakerOpenError`); otherwise the call waits.
 */
export function route(
  registry: Registry,
  scheduler: Scheduler,
  lane: Lane<Ticket>,
  now: number,
  failFast: boolean,
): Lane<Ticket> | SluiceError {
  if (lane.pods === null && lane.account === null) return lane;
  const tripped = lane.allTripped(now);
  const pausedMs = tripped ? undefined : lane.pausedFor(now);
  if (!tripped && pausedMs === undefined) return lane;
  const fallback =
    lane.settings.fallback === undefined ? undefined : registry.lanes.get(lane.settings.fallback);
  if (fallback !== undefined) return fallback;
  if (pausedMs !== undefined) {
    const account = lane.account !== null && lane.account.quotaUntil > now ? lane.account.name : undefined;
    const error = new QuotaPausedError(lane.name, lane.pods?.length ?? 0, retryAfterFloor(pausedMs), account);
    if (scheduler.onRefusal.size > 0) scheduler.onRefusal.emit({ lane: lane.name, error });
    return error;
  }
  return failFast ? breakerOpen(lane, now) : lane;
}

/** The refusal for a lane whose pods are all tripped: Retry-After = the first cooldown's end. */
export function breakerOpen(lane: Lane<Ticket>, now: number): BreakerOpenError {
  let first = lane.pods?.[0];
  for (const pod of lane.pods ?? []) {
    if ((pod.breaker.reopensAt() ?? 0) < (first!.breaker.reopensAt() ?? 0)) first = pod;
  }
  const retryMs = retryAfterFloor((first?.breaker.reopensAt() ?? now) - now);
  return new BreakerOpenError(lane.name, first?.id ?? lane.name, retryMs);
}
