/**
 * What the Governor answers without changing anything: the refusal an arrival or a key would get
 * now (asked before a request body is read), the buckets a call crosses (the `RateLimit`
 * headers) and a lane's numbers (refusal headers). Each reads the registry and the clock's
 * `now`; nothing is queued, counted or refused here.
 */
import type { Clock } from "../core/clock.js";
import { KeyLimitError, type SluiceError } from "../core/errors.js";
import { Lane } from "../core/lane.js";
import { type Priority, rankOrThrow } from "../core/priority.js";
import { type RateLimitInfo, rateLimitsOf } from "../core/rate-limits.js";
import { MIN_RETRY_AFTER_MS } from "../core/retry-after.js";
import type { Scheduler } from "../core/scheduler.js";
import type { LaneStatus } from "../core/snapshot.js";
import { waitState } from "../core/wait-state.js";
import { capped, tokenEstimate } from "./acquire-options.js";
import { currentPriority } from "./context.js";
import { keyRateLimits } from "./key-budgets.js";
import type { Registry } from "./registry.js";
import { route } from "./route.js";

/** The Governor's parts a read looks at. */
export interface ReadParts {
  readonly registry: Registry;
  readonly scheduler: Scheduler;
  readonly clock: Clock;
}

/** `Governor.check`: the refusal an arrival on `lane` would get now, undefined when it would wait or go. */
export function arrivalRefusal(
  p: ReadParts,
  lane: string,
  options: { priority?: Priority; key?: string; tokens?: number },
): SluiceError | undefined {
  const laneState = p.registry.lanes.get(lane);
  if (laneState === undefined) return undefined;
  const key = p.registry.key(options.key);
  const rank = capped(rankOrThrow(options.priority ?? currentPriority() ?? "default"), key);
  const now = p.clock.now();
  const routed = route(p.registry, p.scheduler, laneState, now, false);
  if (!(routed instanceof Lane)) return routed;
  const tokens = tokenEstimate(options.tokens);
  if (tokens instanceof Error) throw tokens;
  return p.scheduler.precheck(routed, rank, key, tokens, now) ?? undefined;
}

/** `Governor.checkKey`: the key's refusal if it is at its in flight + queued bound now. */
export function keyRefusal(registry: Registry, key: string): SluiceError | undefined {
  const k = registry.keys.get(key);
  if (k === undefined || !k.full) return undefined;
  return new KeyLimitError(k.name, k.inflight, k.queued, k.limit, MIN_RETRY_AFTER_MS, k.elsewhere);
}

/** `Governor.rateLimits`: the lane's buckets, then its account's, then `key`'s and its tenant's. */
export function laneRateLimits(
  p: ReadParts,
  lane: string,
  priority: Priority,
  key?: string,
): RateLimitInfo[] {
  const l = p.registry.lanes.get(lane);
  if (l === undefined) return [];
  const now = p.clock.now();
  return [...rateLimitsOf(l, now, rankOrThrow(priority)), ...keyRateLimits(p.registry.key(key), now)];
}

/** `Governor.laneStatus`: the lane's numbers, with why its callers wait when `withState`. */
export function laneStatusOf(p: ReadParts, lane: string, withState: boolean): LaneStatus | undefined {
  const l = p.registry.lanes.get(lane);
  if (l === undefined) return undefined;
  const state = withState ? waitState(l, p.clock.now()) : undefined;
  return {
    inflight: l.inflight,
    queued: l.queue.size,
    queueLimit: l.settings.queueLimit,
    width: l.width,
    state,
  };
}
