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
import type { SluiceError } from "../../core/errors.js";
import { PRIORITIES, type Priority, rankOf } from "../../core/priority.js";
import { type GatewayParts, headerOf, type RequestContext } from "../context.js";
import { HttpError } from "../http-error.js";
import { nameLane, refusalBeforeBody } from "../lane.js";
import { held, holdUntil } from "../pacing.js";
import { sendRefusal } from "../refusal.js";
import { laneNumbers } from "../reply.js";

/** How long a refused upload is discarded before the socket is closed. */
const DISCARD_MS = 2000;
const DISCARD_BYTES = 1 << 20;
/** Declared bodies up to this size are read and dropped after a pre-body refusal (keep-alive kept). */
const SMALL_BODY_BYTES = 16 * 1024;

export function admit(ctx: RequestContext, gw: GatewayParts): boolean | Promise<boolean> {
  if (gw.draining) throw new HttpError(503, "draining", "the gateway is draining; retry on another replica");
  const priority = requestedClass(ctx.req);
  ctx.priority = priority;
  ctx.claim = { priority, key: ctx.caller!.key?.id };
  if (ctx.lane !== undefined) nameLane(ctx, gw, ctx.routed === undefined ? "header:x-sluice-model" : "route");
  const refusal = refusalBeforeBody(ctx, gw);
  if (refusal !== undefined) {
    const mode = ctx.model !== null ? ctx.model.mode : gw.config.admission.mode;
    if (mode === "enforce") {
      ctx.refused = refusal;
      const until = holdUntil(ctx.req, ctx.started, performance.now());
      if (until > 0) return heldRefusal(ctx, gw, refusal, until);
      refuseBeforeBody(ctx, gw, refusal);
      return false;
    }
    gw.metrics.wouldRefuse(refusal.code, ctx.model?.name);
  }
  gw.governor.enter();
  ctx.admitted = true;
  if (ctx.expectContinue) ctx.res.writeContinue();
  return true;
}

/** A pre-body refusal held until its connection's last Retry-After ends (pacing.ts). */
async function heldRefusal(
  ctx: RequestContext,
  gw: GatewayParts,
  refusal: SluiceError,
  until: number,
): Promise<false> {
  if (await held(ctx, gw, until)) refuseBeforeBody(ctx, gw, refusal);
  return false;
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

/** A refusal before the body: 429 + Connection: close, then discard the upload for a bounded time. */
function refuseBeforeBody(ctx: RequestContext, gw: GatewayParts, error: SluiceError): void {
  const { req, res } = ctx;
  const numbers = laneNumbers(gw.governor, ctx.lane);
  // A small declared body is cheaper to drop than the connection: a client retrying after a
  // 429 keeps its keep-alive connection instead of paying a new TCP handshake per attempt.
  // Uploads (large, chunked, or waiting for 100 Continue) are never read: Connection: close.
  const declared = Number(req.headers["content-length"] ?? 0);
  if (!ctx.expectContinue && req.headers["transfer-encoding"] === undefined && declared <= SMALL_BODY_BYTES) {
    sendRefusal(res, error, numbers, ctx.id, false, ctx.priority);
    req.resume();
    return;
  }
  sendRefusal(res, error, numbers, ctx.id, true, ctx.priority);
  // Half-close: our FIN goes out after the answer; read and drop what the client still sends,
  // so it reads the 429 instead of a connection reset, but never more than a bound.
  let dropped = 0;
  const socket = req.socket;
  const timer = setTimeout(() => socket.destroy(), DISCARD_MS);
  timer.unref();
  req.on("data", (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > DISCARD_BYTES) socket.destroy();
  });
  req.on("end", () => clearTimeout(timer));
  socket.on("close", () => clearTimeout(timer));
  req.resume();
}
