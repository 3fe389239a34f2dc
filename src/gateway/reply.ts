/**
 * The one place a thrown error becomes an answer, and so the one place a refusal is sent
 * (issue 23): a capacity refusal (`SluiceError`: 429 or 503, with the lane's numbers as
 * headers, refusal.ts), bad input (`HttpError`: a 4xx, or 503 `draining`, http-error.ts), or
 * anything else (500, logged). The request path's refusals come through {@link refuse} — the
 * pipeline's for whatever a phase threw, the admit phase's before the body — which records the
 * refusal for settle and applies the retry-storm hold (pacing.ts) in this one place; the admin
 * routes, which have no request context, answer through {@link sendError}.
 */
import type { ServerResponse } from "node:http";
import type { Logger } from "pino";
import { isSluiceError, type SluiceError } from "../core/errors.js";
import type { Governor } from "../governor/governor.js";
import type { GatewayParts, RequestContext } from "./context.js";
import { HttpError, sendHttpError } from "./http-error.js";
import { held, holdUntil } from "./pacing.js";
import { type LaneNumbers, sendRefusal } from "./refusal.js";

/** How long a refused upload is discarded before the socket is closed. */
const DISCARD_MS = 2000;
const DISCARD_BYTES = 1 << 20;
/** Declared bodies up to this size are read and dropped after a pre-body refusal (keep-alive kept). */
const SMALL_BODY_BYTES = 16 * 1024;

/** A lane's numbers for refusal headers; undefined for an unknown or pass-through lane. */
export function laneNumbers(governor: Governor, lane: string | undefined): LaneNumbers | undefined {
  if (lane === undefined) return undefined;
  const s = governor.laneStatus(lane, true);
  return s === undefined ? undefined : { lane, ...s };
}

/**
 * Ends the request with `error` as its answer; resolves (or returns) `false`, the phase's "the
 * request has ended". The refusal is recorded once for settle's metrics, whoever reported it.
 * A capacity refusal to a call that holds no lease, whose client sent the same request again
 * before its last Retry-After (pacing.ts), is sent when that Retry-After ends, a second at most,
 * and not at all if the client leaves meanwhile. `beforeBody`: the admit phase's refusal, sent
 * before one byte of the body was read ({@link sendBeforeBody}).
 */
export function refuse(
  ctx: RequestContext,
  gw: GatewayParts,
  error: unknown,
  beforeBody = false,
): false | Promise<false> {
  // The metrics count each refusal object once, whether the Governor reported it or not.
  if (error instanceof HttpError || isSluiceError(error)) ctx.refused = error;
  if (isSluiceError(error) && ctx.lease === undefined) {
    const until = holdUntil(ctx.req, ctx.started, performance.now());
    if (until > 0) return heldRefusal(ctx, gw, error, until, beforeBody);
  }
  send(ctx, gw, error, beforeBody);
  return false;
}

/** A refusal held until its connection's last Retry-After ends (pacing.ts). */
async function heldRefusal(
  ctx: RequestContext,
  gw: GatewayParts,
  error: SluiceError,
  until: number,
  beforeBody: boolean,
): Promise<false> {
  if (await held(ctx, gw, until)) send(ctx, gw, error, beforeBody);
  return false;
}

function send(ctx: RequestContext, gw: GatewayParts, error: unknown, beforeBody: boolean): void {
  if (beforeBody && isSluiceError(error)) sendBeforeBody(ctx, gw, error);
  else sendError(ctx.res, error, ctx.id, gw.log, gw.governor, ctx.lane, ctx.priority);
}

/**
 * Answers `error`. Once the answer's head is out there is nothing left to say: the connection is
 * destroyed so the client sees a truncated answer, not a complete-looking one.
 */
export function sendError(
  res: ServerResponse,
  error: unknown,
  requestId: string,
  log: Logger,
  governor: Governor,
  lane?: string,
  priority?: string,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (isSluiceError(error)) {
    sendRefusal(res, error, laneNumbers(governor, lane), requestId, false, priority);
    return;
  }
  if (error instanceof HttpError) {
    // Bad input sent before its body was read: close, so the unread bytes are not a next request.
    sendHttpError(res, error, requestId, !res.req.complete);
    if (!res.req.complete) res.req.resume();
    return;
  }
  log.error({ err: error, request_id: requestId }, "unexpected gateway error");
  sendHttpError(res, new HttpError(500, "bad_request", "internal gateway error"), requestId, true);
}

/** A refusal before the body: 429 + Connection: close, then discard the upload for a bounded time. */
function sendBeforeBody(ctx: RequestContext, gw: GatewayParts, error: SluiceError): void {
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
