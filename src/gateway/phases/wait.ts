/**
 * Phase 5: a lease on every budget of the lane's path (lane, pods, groups, key), in the class
 * asked for (the Governor lowers it to the key's `max_priority`).
 *
 * Most calls are granted on arrival: `tryAcquire` answers at once with no promise, signal or
 * thrown error. Under overload most of the rest are refused at once: `check` says so without
 * them either, and on a lane that is full or has waiters it is asked first (one look instead
 * of two for a refused call). Only a call that really queues pays for an `AbortController` and a promise; the
 * client leaving removes it from the queue and nothing is sent upstream. With every pod tripped
 * and no fallback the answer is 503 `upstream_unavailable` at once (`failFast`).
 *
 * Shadow mode never waits and never refuses: a call the Governor refuses runs anyway on a
 * budget-less lease, counted as would-refuse (`shadow.ts`).
 */
import { isSluiceError } from "../../core/errors.js";
import type { Lease } from "../../core/lease.js";
import type { GatewayParts, RequestContext } from "../context.js";
import { grantsOnArrival, refusalBeforeGrant } from "../lane.js";

export function wait(ctx: RequestContext, gw: GatewayParts): boolean | Promise<boolean> {
  const lane = ctx.model!.name;
  if (ctx.shadow !== null) return ctx.clientGone ? false : shadowLease(ctx, gw, lane);
  // With a fleet store no grant is immediate (Redis answers it): `tryAcquire` never grants and
  // `check` would only repeat what `acquire` decides at once — the same refusal, thrown before
  // anything queues — so every call goes straight to `acquire`.
  if (gw.config.store.kind === "redis") return ctx.clientGone ? false : queue(ctx, gw, lane);
  // A lane that cannot grant on arrival is asked for its refusal first: under a storm nearly
  // every call is refused, and trying for a lease first built a Ticket and routed it for
  // nothing, then `check` did it again (issue 13). Which comes first changes no answer:
  // `check` refuses only a call `tryAcquire` could not have granted, and `acquire` grants on
  // arrival too.
  if (!grantsOnArrival(ctx, gw)) {
    const refusal = refusalBeforeGrant(ctx, gw);
    if (refusal !== undefined) throw refusal;
    return ctx.clientGone ? false : queue(ctx, gw, lane);
  }
  ctx.lease = gw.governor.tryAcquire(lane, ctx.claim!);
  if (ctx.lease !== undefined) return true;
  if (ctx.clientGone) return false;
  // The metrics count a refusal object once, whether the Governor reported it or settle does.
  const refusal = refusalBeforeGrant(ctx, gw);
  if (refusal !== undefined) throw refusal;
  return queue(ctx, gw, lane);
}

async function queue(ctx: RequestContext, gw: GatewayParts, lane: string): Promise<boolean> {
  const lease = await queuedLease(ctx, gw, lane);
  if (lease === null) return false; // the client left while queued: no one to answer
  ctx.lease = lease;
  return true;
}

/**
 * A lease on `lane` for the call, waiting in its queue for as long as the lane's queue timeout
 * allows, or null when the client left meanwhile; a refusal (at once, or at the timeout) is
 * thrown. The one queued acquire of the request path: the wait phase's, and dispatch's for a
 * fallback lane (fallback.ts). Only a call that gets here pays for an `AbortController`,
 * which the client's leaving aborts (`RequestContext.onClose`).
 */
export async function queuedLease(
  ctx: RequestContext,
  gw: GatewayParts,
  lane: string,
): Promise<Lease | null> {
  const abort = new AbortController();
  ctx.abort = abort;
  const { priority, key } = ctx.claim!;
  try {
    return await gw.governor.acquire(lane, {
      priority,
      key,
      tokens: ctx.tokens,
      signal: abort.signal,
      failFast: true,
    });
  } catch (error) {
    if (abort.signal.aborted) return null;
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
