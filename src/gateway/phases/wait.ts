/**
 * Phase 5: a lease on every budget of the lane's path (lane, pods, groups, key), in the class
 * asked for (the Governor lowers it to the key's `max_priority`).
 *
 * Most calls are granted on arrival: `tryAcquire` answers at once with no promise, signal or
 * thrown error. Under overload most of the rest are refused at once: `check` says so without
 * them either. Only a call that really queues pays for an `AbortController` and a promise; the
 * client leaving removes it from the queue and nothing is sent upstream. With every pod tripped
 * and no fallback the answer is 503 `upstream_unavailable` at once (`failFast`).
 *
 * Shadow mode never waits and never refuses: a call the Governor refuses runs anyway on a
 * budget-less lease, counted as would-refuse (`shadow.ts`).
 */
import { isSluiceError } from "../../core/errors.js";
import type { GatewayParts, RequestContext } from "../context.js";

export function wait(ctx: RequestContext, gw: GatewayParts): boolean | Promise<boolean> {
  const lane = ctx.model!.name;
  if (ctx.shadow !== null) return ctx.clientGone ? false : shadowLease(ctx, gw, lane);
  const claim = ctx.tokens === 0 ? ctx.claim! : { ...ctx.claim!, tokens: ctx.tokens };
  ctx.lease = gw.governor.tryAcquire(lane, claim);
  if (ctx.lease !== undefined) return true;
  if (ctx.clientGone) return false;
  // The metrics count a refusal object once, whether the Governor reported it or settle does.
  const refusal = gw.governor.check(lane, claim);
  if (refusal !== undefined) throw refusal;
  return queue(ctx, gw, lane);
}

async function queue(ctx: RequestContext, gw: GatewayParts, lane: string): Promise<boolean> {
  const abort = new AbortController();
  ctx.abort = abort;
  const { priority, key } = ctx.claim!;
  try {
    ctx.lease = await gw.governor.acquire(lane, {
      priority,
      key,
      tokens: ctx.tokens,
      signal: abort.signal,
      failFast: true,
    });
    return true;
  } catch (error) {
    if (abort.signal.aborted) return false; // the client left while queued: no one to answer
    throw error;
  }
}

async function shadowLease(ctx: RequestContext, gw: GatewayParts, lane: string): Promise<boolean> {
  const { priority, key } = ctx.claim!;
  try {
    ctx.lease = await gw.governor.acquire(lane, { priority, key, tokens: ctx.tokens, wait: false });
  } catch (error) {
    if (!isSluiceError(error)) throw error;
    ctx.lease = ctx.shadow!.letThrough(error);
  }
  return true;
}
