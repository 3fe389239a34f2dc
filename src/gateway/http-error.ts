/**
 * Answers to bad input (DESIGN §3.2 last row): a defined status, an OpenAI-shaped body whose
 * message names what was wrong and where (header, field), and nothing counted or forwarded.
 */
import type { ServerResponse } from "node:http";

export type BadInputCode =
  | "bad_request"
  | "unauthorized"
  | "forbidden"
  | "unknown_model"
  | "not_found"
  | "body_too_large"
  | "unsupported_media_type"
  | "method_not_allowed"
  | "request_timeout"
  | "draining";

/** A request sluice will not carry, with the status and the place that was wrong. */
export class HttpError extends Error {
  override readonly name = "HttpError";

  constructor(
    readonly status: number,
    readonly code: BadInputCode,
    message: string,
    /** The header or body field at fault, e.g. `body.model` or `header:content-type`. */
    readonly param?: string,
  ) {
    super(message);
  }
}

/** 404 `unknown_model`: `model` is not configured; `param` says where the name came from. */
export function unknownModel(model: string, param: string): HttpError {
  return new HttpError(
    404,
    "unknown_model",
    `no model named "${model}" is configured on this gateway`,
    param,
  );
}

const TYPE_BY_STATUS: Record<number, string> = {
  401: "authentication_error",
  403: "permission_error",
  404: "invalid_request_error",
  503: "sluice_unavailable",
};

/** Writes `error` as JSON; `close` also asks the client to drop the connection. */
export function sendHttpError(res: ServerResponse, error: HttpError, requestId: string, close = false): void {
  const body = JSON.stringify({
    error: {
      type: TYPE_BY_STATUS[error.status] ?? "invalid_request_error",
      code: error.code,
      message: error.message,
      param: error.param ?? null,
    },
  });
  const headers: Record<string, string | number> = {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    "x-sluice-request-id": requestId,
    "x-sluice-reason": error.code,
  };
  if (error.status === 401) headers["www-authenticate"] = 'Bearer realm="sluice"';
  if (error.status === 503) {
    headers["retry-after"] = "1";
    headers["retry-after-ms"] = "1000";
  }
  if (close) headers.connection = "close";
  res.writeHead(error.status, headers);
  res.end(body);
}

/** Writes a JSON document with status 200 (admin routes). */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

/**
 * What sluice answers when a pod failed a call it could not carry elsewhere: `upstream_error`
 * (502: the pod could not be reached, or closed the connection without answering; or the pod's
 * own overload status when its answer was too large to relay) and `upstream_timeout` (504).
 */
export type UpstreamErrorCode = "upstream_error" | "upstream_timeout";

/**
 * Writes an upstream failure as an OpenAI-shaped body. The message is plain and names no pod
 * address and no internal error text: those go to the request's log line
 * (`RequestContext.failures`).
 */
export function sendUpstreamError(
  res: ServerResponse,
  status: number,
  code: UpstreamErrorCode,
  message: string,
  lane: string,
  headers: Record<string, string | number>,
): void {
  const body = JSON.stringify({ error: { type: "upstream_error", code, message, lane } });
  res.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    "x-sluice-reason": code,
  });
  res.end(body);
}
