/**
 * What one failed upstream attempt means (DESIGN §1.3), from undici's error and whether the
 * request had been sent: may the call go elsewhere, what is counted for the pod, and what the
 * client is told when nothing else takes it. A connection that failed before the request was
 * written is the only failure that proves a call never started: an answered status proves
 * nothing unless the pod's config says so (`redispatch.ts`, issue 21). The client's message is plain; the undici code and
 * message are the `detail`, for the log only.
 */
import type { UpstreamFailure } from "./context.js";
import type { UpstreamErrorCode } from "./http-error.js";
import type { CallTimeouts } from "./upstreams.js";

/**
 * undici's errors about the call itself rather than the pod (an invalid request, a pool being
 * closed or destroyed): before the request is written they say nothing about the pod.
 */
const LOCAL = new Set([
  "UND_ERR_INVALID_ARG",
  "UND_ERR_DESTROYED",
  "UND_ERR_CLOSED",
  "UND_ERR_NOT_SUPPORTED",
  "UND_ERR_ABORTED",
  "UND_ERR_REQ_CONTENT_LENGTH_MISMATCH",
]);

export interface AttemptError {
  /**
   * `local`: never sent, and not the pod's doing (nothing for its breaker); `not_started`: the
   * connection failed before the request was written, so the pod never saw it (the call may go
   * elsewhere); `started`: the pod may hold the whole request and may have run it (never sent
   * again).
   */
  readonly kind: "local" | "not_started" | "started";
  /** For `ctx.failures`: unused for `local`. */
  readonly cause: UpstreamFailure["cause"];
  /** The undici code and message, for the log. */
  readonly detail: string;
  /** The answer when the call goes nowhere else and nothing was sent to the client yet. */
  readonly status: 502 | 504;
  readonly code: UpstreamErrorCode;
  readonly message: string;
}

/**
 * Classifies `error`; `started` says whether undici had started the attempt on a connected socket
 * (dispatch's `onRequestStart`), from which point a buffered body has been written.
 */
export function attemptError(error: Error, started: boolean, timeouts: CallTimeouts): AttemptError {
  const raw = (error as { code?: unknown }).code;
  const code = typeof raw === "string" ? raw : undefined;
  const detail = `${code ?? error.name}: ${error.message}`;
  if (!started) {
    if (code === undefined || LOCAL.has(code)) {
      const message = "the gateway could not send the call to a model server";
      return { kind: "local", cause: "reset", detail, status: 502, code: "upstream_error", message };
    }
    const cause = code === "UND_ERR_CONNECT_TIMEOUT" ? "timeout" : "refused";
    const message = "no model server could be reached for this call";
    return { kind: "not_started", cause, detail, status: 502, code: "upstream_error", message };
  }
  if (code === "UND_ERR_HEADERS_TIMEOUT") {
    const message = `the model server did not start its answer within ${timeouts.headersTimeout / 1000} s`;
    return { kind: "started", cause: "timeout", detail, status: 504, code: "upstream_timeout", message };
  }
  if (code === "UND_ERR_BODY_TIMEOUT") {
    const message = `the model server sent nothing for ${timeouts.bodyTimeout / 1000} s`;
    return { kind: "started", cause: "timeout", detail, status: 504, code: "upstream_timeout", message };
  }
  const message = "the model server closed the connection without answering";
  return { kind: "started", cause: "reset", detail, status: 502, code: "upstream_error", message };
}
