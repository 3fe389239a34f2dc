/**
 * One pure function decides what a call's ending means for the pod (STYLE G3, DESIGN §1.3):
 *
 * | outcome | examples | feeds |
 * | --- | --- | --- |
 * | `congestion` | refused / reset before any byte; 502, 503, 504, 529; 429 without a quota reset | AIMD cut, then breaker |
 * | `quota` | 429 with `Retry-After` or a rate-limit reset | pauses the budget until the reset |
 * | `failure` | timeouts, opaque socket errors with no status | breaker only |
 * | `success` | 2xx, and the server's own answers such as 400 or 500 | breaker reset, AIMD growth |
 * | `ignore` | client abort, sluice's own refusals | nothing |
 */
import { isSluiceError } from "./errors.js";

export type Outcome =
  | { kind: "success" }
  | { kind: "congestion" }
  | { kind: "quota"; resetMs: number }
  | { kind: "failure" }
  | { kind: "ignore" };

/** What `lease.failed()` accepts: a status, a description, or the thrown error itself. */
export type FailureInput =
  | number
  | {
      status?: number;
      /** The connection was refused or reset before any response byte. */
      refused?: boolean;
      /** The `Retry-After` (or rate-limit reset) the server sent, in ms. */
      retryAfterMs?: number;
      headers?: unknown;
    }
  | Error
  | unknown;

const SUCCESS: Outcome = { kind: "success" };
const CONGESTION: Outcome = { kind: "congestion" };
const FAILURE: Outcome = { kind: "failure" };
/** The outcome that feeds nothing. */
export const IGNORE: Outcome = { kind: "ignore" };

const OVERLOAD_STATUSES = new Set([502, 503, 504, 529]);
// Socket errors that mean the pod never took the request: a refusal, not a failure mid-call.
const REFUSAL_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_CONNECT"]);
const TIMEOUT_CODES = new Set([
  "ETIMEDOUT",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

/** Classifies a call's ending. Pure: no clock, no I/O. */
export function classifyOutcome(input: FailureInput): Outcome {
  if (typeof input === "number") return classifyStatus(input, undefined);
  if (input === null || typeof input !== "object") return FAILURE;
  if (isSluiceError(input)) return IGNORE;
  const o = input as Record<string, unknown>;
  if (
    (o.name === "AbortError" || o.code === "ABORT_ERR" || o.code === "UND_ERR_ABORTED") &&
    o.status === undefined
  )
    return IGNORE;
  if (o.refused === true) return CONGESTION;
  const status = numberField(o.status) ?? numberField(o.statusCode);
  if (status !== undefined) return classifyStatus(status, quotaResetMs(o));
  const code = typeof o.code === "string" ? o.code : undefined;
  const cause = o.cause as Record<string, unknown> | undefined;
  const causeCode = cause && typeof cause.code === "string" ? cause.code : undefined;
  if ((code && REFUSAL_CODES.has(code)) || (causeCode && REFUSAL_CODES.has(causeCode))) return CONGESTION;
  if ((code && TIMEOUT_CODES.has(code)) || (causeCode && TIMEOUT_CODES.has(causeCode))) return FAILURE;
  return FAILURE;
}

function classifyStatus(status: number, resetMs: number | undefined): Outcome {
  if (status === 429) return resetMs !== undefined ? { kind: "quota", resetMs } : CONGESTION;
  if (OVERLOAD_STATUSES.has(status)) return CONGESTION;
  if (status === 408) return FAILURE;
  return SUCCESS;
}

function numberField(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

/** The quota reset carried by a 429: `retryAfterMs`, or `Retry-After` / `retry-after-ms` / `x-ratelimit-reset-*` headers. */
function quotaResetMs(o: Record<string, unknown>): number | undefined {
  const direct = numberField(o.retryAfterMs);
  if (direct !== undefined) return Math.max(0, direct);
  const headers = o.headers;
  if (headers === null || typeof headers !== "object") return undefined;
  const get = (name: string): string | undefined => {
    const h = headers as { get?: (n: string) => string | null } & Record<string, unknown>;
    const v = typeof h.get === "function" ? h.get(name) : h[name];
    if (Array.isArray(v)) return typeof v[0] === "string" ? v[0] : undefined;
    return typeof v === "string" ? v : undefined;
  };
  const ms = Number(get("retry-after-ms"));
  if (get("retry-after-ms") !== undefined && Number.isFinite(ms) && ms >= 0) return ms;
  const ra = get("retry-after");
  if (ra !== undefined) {
    const seconds = Number(ra);
    // An HTTP-date Retry-After needs the wall clock; the gateway converts it to retryAfterMs.
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  }
  // OpenAI-style: a reset per limit. The limit that ran out (its remaining count 0) is the one
  // that throttled; when both did, the later reset; when neither says, the earlier one.
  let exhausted: number | undefined;
  let earliest: number | undefined;
  for (const kind of ["requests", "tokens"]) {
    const v = get(`x-ratelimit-reset-${kind}`);
    const reset = v === undefined ? undefined : parseResetDuration(v);
    if (reset === undefined) continue;
    const remaining = Number(get(`x-ratelimit-remaining-${kind}`));
    if (!Number.isFinite(remaining) || remaining <= 0) exhausted = Math.max(exhausted ?? 0, reset);
    earliest = Math.min(earliest ?? reset, reset);
  }
  if (exhausted !== undefined || earliest !== undefined) return exhausted ?? earliest;
  const reset = get("ratelimit-reset");
  if (reset !== undefined) return parseResetDuration(reset);
  // IETF draft-ietf-httpapi-ratelimit-headers: `RateLimit: "default";r=0;t=30` (t = seconds to reset).
  const t = /(?:^|;)\s*t=(\d+(?:\.\d+)?)/.exec(get("ratelimit") ?? "");
  return t === null ? undefined : Number(t[1]) * 1000;
}

/** OpenAI-style reset durations: "1s", "6m0s", "20ms", or bare seconds. */
function parseResetDuration(v: string): number | undefined {
  if (/^\d+(\.\d+)?$/.test(v)) return Number(v) * 1000;
  let total = 0;
  let matched = false;
  for (const m of v.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) {
    matched = true;
    const n = Number(m[1]);
    total += m[2] === "ms" ? n : m[2] === "s" ? n * 1000 : m[2] === "m" ? n * 60_000 : n * 3_600_000;
  }
  return matched ? total : undefined;
}
