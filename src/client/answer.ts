/**
 * What the client reads from an answer's headers (DESIGN §3.2): whether it is one of sluice's own
 * capacity refusals (and so safe to send again), how long to wait, and the window the gateway
 * advertises.
 */
import { CAPACITY_REFUSAL_CODES } from "../core/errors.js";
import { MIN_RETRY_AFTER_MS } from "../core/retry-after.js";

/**
 * The `X-Sluice-Reason` codes of sluice's capacity refusals the client sends again: every capacity
 * refusal (`CAPACITY_REFUSAL_CODES`, from the error classes) is answered before the call is
 * forwarded, so sending it again can never run it twice — but `queue_timeout`, the bound the
 * caller asked for, reached (seed 002 D4: a queue timeout is never retried — the caller's own
 * deadline has passed, and a retry would queue it again). Other codes are not replayed:
 * `upstream_error` and `upstream_timeout` (502/504) come from a call a pod may have started; bad
 * input (400, 401, 404, 413, …) would only be refused again.
 */
export const REPLAYABLE_REASONS: ReadonlySet<string> = new Set(
  CAPACITY_REFUSAL_CODES.filter((code) => code !== "queue_timeout"),
);

/** The refusal's code when `res` is a sluice capacity refusal (429 or 503 with `X-Sluice-Reason`), else undefined. */
export function sluiceRefusal(res: Response): string | undefined {
  if (res.status !== 429 && res.status !== 503) return undefined;
  const reason = res.headers.get("x-sluice-reason");
  return reason !== null && REPLAYABLE_REASONS.has(reason) ? reason : undefined;
}

/** When an answer carries no wait at all: the gateway's own minimum. */
export const DEFAULT_RETRY_AFTER_MS = MIN_RETRY_AFTER_MS;

/**
 * The wait an answer asks for, in ms: `retry-after-ms` when present (sluice and OpenAI send it),
 * else `Retry-After` as seconds or an HTTP date, else 1 s.
 */
export function retryAfterMsOf(headers: Headers, nowMs = Date.now()): number {
  const ms = Number(headers.get("retry-after-ms") ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get("retry-after");
  if (value !== null) {
    const seconds = Number(value);
    if (value.trim() !== "" && Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const date = Date.parse(value);
    if (Number.isFinite(date)) return Math.max(0, date - nowMs);
  }
  return DEFAULT_RETRY_AFTER_MS;
}

/** `X-Sluice-Width` and `X-Sluice-Queue-Limit` when the answer carries both, else undefined. */
export function advertisedWindow(headers: Headers): { width: number; queueLimit: number } | undefined {
  const width = headers.get("x-sluice-width");
  const queueLimit = headers.get("x-sluice-queue-limit");
  if (width === null || queueLimit === null) return undefined;
  const w = Number(width);
  const q = Number(queueLimit);
  return Number.isInteger(w) && Number.isInteger(q) && w >= 0 && q >= 0
    ? { width: w, queueLimit: q }
    : undefined;
}
