/**
 * Phase 2, pre-body admission: decide before one byte of the body is read, so a refused upload
 * is never buffered (fastify's `onRequest`: no `'data'` listener is attached yet). In order:
 *
 * 1. draining → 503 `draining`;
 * 2. the class asked for: `X-Sluice-Priority`, or 400 `bad_request` naming the header and the
 *    allowed classes (the Governor lowers it to the key's `max_priority`, nowhere else);
 * 3. the lane when it is named before the body (a route, or `X-Sluice-Model`), else 404;
 * 4. the gateway bound, then the key and lane bounds when known (lane.ts: `refusalBeforeBody`)
 *    → 429, sent with `Connection: close` in place of `100 Continue`, the upload discarded for a
 *    bounded time. In shadow mode the refusal is counted as would-refuse and the call goes on.
 *    A client that retried before its last Retry-After while the loop is saturated gets the
 *    refusal when that Retry-After ends, a second at most (pacing.ts).
 *
 * Nothing is counted before the request passes; then it holds the gateway bound until settle.
 */
import type { IncomingMessage } from "node:http";
import { PRIORITIES, type Priority, rankOf } from "../../core/priority.js";
import { type GatewayParts, headerOf, type RequestContext } from "../context.js";
import { HttpError } from "../http-error.js";
import { nameLane, refusalBeforeBody } from "../lane.js";
import { refuse } from "../reply.js";

export function admit(ctx: RequestContext, gw: GatewayParts): boolean | Promise<boolean> {
  if (gw.draining) throw new HttpError(503, "draining", "the gateway is draining; retry on another replica");
  const priority = requestedClass(ctx.req);
  ctx.priority = priority;
  ctx.claim = { priority, key: ctx.caller!.key?.id };
  if (ctx.lane !== undefined) nameLane(ctx, gw, ctx.routed === undefined ? "header:x-sluice-model" : "route");
  const refusal = refusalBeforeBody(ctx, gw);
  if (refusal !== undefined) {
    const mode = ctx.model !== null ? ctx.model.mode : gw.config.admission.mode;
    // 429 + Connection: close when an upload would follow, held if the client storms (reply.ts).
    if (mode === "enforce") return refuse(ctx, gw, refusal, true);
    gw.metrics.wouldRefuse(refusal.code, ctx.model?.name);
  }
  gw.governor.enter();
  ctx.admitted = true;
  if (ctx.expectContinue) ctx.res.writeContinue();
  return true;
}

/** `X-Sluice-Priority` as a class (`default` when absent), or 400 naming the allowed ones. */
export function requestedClass(req: IncomingMessage): Priority {
  const raw = headerOf(req, "x-sluice-priority");
  if (raw === undefined) return "default";
  if (rankOf(raw) !== undefined) return raw as Priority;
  throw new HttpError(
    400,
    "bad_request",
    `X-Sluice-Priority must be ${PRIORITIES.slice(0, -1).join(", ")} or ${PRIORITIES.at(-1)}; got "${raw}"`,
    "header:x-sluice-priority",
  );
}
