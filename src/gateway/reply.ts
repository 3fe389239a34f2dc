/**
 * The one place a thrown error becomes an answer: a capacity refusal (`SluiceError`, with the
 * lane's numbers), bad input (`HttpError`), or anything else (500, logged). Used by the phase
 * runner and by the admin routes.
 */
import type { ServerResponse } from "node:http";
import type { Logger } from "pino";
import { isSluiceError } from "../core/errors.js";
import type { Governor } from "../governor/governor.js";
import { HttpError, sendHttpError } from "./http-error.js";
import { type LaneNumbers, sendRefusal } from "./refusal.js";

/** A lane's numbers for refusal headers; undefined for an unknown or pass-through lane. */
export function laneNumbers(governor: Governor, lane: string | undefined): LaneNumbers | undefined {
  if (lane === undefined) return undefined;
  const s = governor.laneStatus(lane, true);
  return s === undefined ? undefined : { lane, ...s };
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
