/**
 * Every failure a caller handles differently has its own class with a stable `code` (the
 * gateway's refusal code, DESIGN §3.2), an `httpStatus`, and the numbers it was decided on
 * (STYLE G5, G6). Match on `code` or use the `is…Error` guards: `instanceof` also works across
 * two loaded copies of sluice because each class checks a `Symbol.for` brand.
 */

import { MIN_RETRY_AFTER_MS } from "./retry-after.js";

const BRAND = Symbol.for("sluice.error");

/** The stable codes; equal to the gateway's `error.code` for the same refusal. */
export type SluiceErrorCode =
  | "queue_full"
  | "queue_timeout"
  | "key_limit"
  | "rate_limit"
  | "upstream_unavailable"
  | "quota_paused"
  | "store_unavailable"
  | "draining"
  | "config_invalid";

/** Base class of every error sluice throws on purpose. */
export abstract class SluiceError extends Error {
  abstract readonly code: SluiceErrorCode;
  abstract readonly httpStatus: number;
  readonly [BRAND] = true;
  /**
   * Whether instances capture a stack trace. Capacity refusals are answers, not bugs, and under
   * overload they are made thousands of times a second: capturing a stack for each cost several
   * percent of the gateway's refusal path. `ConfigError` keeps its stack.
   */
  static readonly captureStack: boolean = false;

  constructor(message: string) {
    const limit = Error.stackTraceLimit;
    if (!(new.target as unknown as typeof SluiceError).captureStack) Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
  }

  // `this` is the class `instanceof` was asked about (a subclass too): it must stay polymorphic.
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: see above
    if (this === SluiceError) return isSluiceError(value);
    // Subclasses: same brand and one of the class's codes, so it works across package copies.
    // biome-ignore lint/complexity/noThisInStatic: see above
    const codes = (this as unknown as { CODES?: readonly string[] }).CODES;
    return isSluiceError(value) && codes?.includes(value.code) === true;
  }
}

/** True for any error sluice raised itself. */
export function isSluiceError(value: unknown): value is SluiceError {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

/** How a queue-full message names free slots held back for interactive calls. */
function reservedNote(reserved: number): string {
  if (reserved <= 0) return "";
  return reserved === 1
    ? "; the free slot is the interactive reserve"
    : `; the ${reserved} free slots are the interactive reserve`;
}

/** A lane (or the gateway) is full: nothing was sent upstream, it is safe to retry later. */
export class QueueFullError extends SluiceError {
  static readonly CODES = ["queue_full"];
  readonly code = "queue_full";
  readonly httpStatus = 429;
  override readonly name = "QueueFullError";

  constructor(
    readonly lane: string,
    readonly inflight: number,
    readonly queued: number,
    readonly queueLimit: number,
    readonly width: number,
    readonly retryAfterMs: number,
    /** Why: `full` (queue at its limit), `shed` (pushed out by a higher class), `expected_wait`. */
    readonly reason: "full" | "shed" | "expected_wait" | "no_wait" = "full",
    /**
     * Free slots the refused call could not take because they are the lane's interactive reserve
     * (0 for an interactive call): a lane "full" at 15/16 says why the 16th was not its.
     */
    readonly reserved = 0,
  ) {
    super(
      `lane ${lane} is full (${inflight}/${width} in flight${reservedNote(reserved)}, ${queued}/${queueLimit} queued` +
        `${reason === "shed" ? "; shed for a higher-priority call" : reason === "expected_wait" ? "; expected wait exceeds the queue timeout" : ""}); retry in ${retryAfterMs} ms`,
    );
  }
}

/** Base of sluice's timeouts, so `catch (e) { if (e instanceof TimeoutError) … }` sees them all. */
export abstract class TimeoutError extends SluiceError {
  static readonly CODES: readonly string[] = ["queue_timeout"];
}

/** Waited the lane's whole `queueTimeoutMs` without a slot. Never retried automatically. */
export class QueueTimeoutError extends TimeoutError {
  static override readonly CODES = ["queue_timeout"];
  readonly code = "queue_timeout";
  readonly httpStatus = 503;
  override readonly name = "QueueTimeoutError";

  constructor(
    readonly lane: string,
    readonly waitedMs: number,
    /** 1-based position in the lane's queue when it timed out. */
    readonly position: number,
    readonly retryAfterMs = MIN_RETRY_AFTER_MS,
  ) {
    super(
      `waited ${Math.round(waitedMs)} ms for model capacity on lane ${lane} (position ${position} in its queue); raise the lane's queueTimeoutMs or its limit`,
    );
  }
}

/** The caller's key (tenant) already has `maxInflight` calls in flight or queued. */
export class KeyLimitError extends SluiceError {
  static readonly CODES = ["key_limit"];
  readonly code = "key_limit";
  readonly httpStatus = 429;
  override readonly name = "KeyLimitError";

  constructor(
    readonly key: string,
    readonly inflight: number,
    readonly queued: number,
    readonly maxInflight: number,
    readonly retryAfterMs: number,
    /** Calls other replicas of a fleet hold on the key (in flight + queued), as last heard. */
    readonly elsewhere = 0,
  ) {
    const others = elsewhere > 0 ? ` + ${elsewhere} on other replicas` : "";
    super(
      `key ${key} is at its limit (${inflight} in flight + ${queued} queued${others} of ${maxInflight}); retry in ${retryAfterMs} ms`,
    );
  }
}

/** Every pod of the lane is tripped and there is no fallback; the caller asked to fail fast. */
export class BreakerOpenError extends SluiceError {
  static readonly CODES = ["upstream_unavailable"];
  readonly code = "upstream_unavailable";
  readonly httpStatus = 503;
  override readonly name = "BreakerOpenError";

  constructor(
    readonly lane: string,
    readonly endpoint: string,
    readonly retryAfterMs: number,
  ) {
    super(`every pod of lane ${lane} is tripped (first: ${endpoint}); retry in ${retryAfterMs} ms`);
  }
}

/**
 * A token or request budget (`tpm` / `rpm`, a model's or an account's) cannot take the call: its
 * estimate alone exceeds the bucket's capacity (`exceeds_capacity`: it never fits, shrink the
 * request or its `max_tokens`), or the bucket will not refill enough within the lane's queue
 * timeout (`cannot_cover_in_time`: Retry-After is the refill time), or it has no room now for a
 * call that may not wait (`no_wait`). Nothing was sent upstream.
 */
export class RateLimitError extends SluiceError {
  static readonly CODES = ["rate_limit"];
  readonly code = "rate_limit";
  readonly httpStatus = 429;
  override readonly name = "RateLimitError";

  constructor(
    readonly lane: string,
    /** The bucket that said no: the model's lane or the account. */
    readonly budget: string,
    readonly unit: "tokens" | "requests",
    /** What the call needs from the bucket: its token estimate, or 1 request. */
    readonly needed: number,
    /** The bucket's capacity: its per-minute rate. */
    readonly perMinute: number,
    /** What the bucket holds now (whole units, negative while in debt). */
    readonly available: number,
    readonly retryAfterMs: number,
    readonly reason: "exceeds_capacity" | "cannot_cover_in_time" | "no_wait",
    /** What the bucket keeps for interactive calls and this call had to leave (0 for an interactive call). */
    readonly reserve = 0,
  ) {
    const kept = reserve > 0 ? ` and leave the ${reserve} kept for interactive calls` : "";
    super(
      `${budget}'s ${unit} budget (${perMinute} ${unit}/min, ${available} available) ${
        reason === "exceeds_capacity"
          ? `can never cover this call's ${needed} ${unit}${kept}: it exceeds the capacity`
          : reason === "cannot_cover_in_time"
            ? `cannot cover this call's ${needed} ${unit}${kept} within the queue timeout`
            : `has no room now for this call's ${needed} ${unit}${kept}`
      } (lane ${lane}); retry in ${retryAfterMs} ms`,
    );
  }
}

/**
 * Every pod of the lane is paused by its provider's quota signal (a 429 with `Retry-After` or a
 * rate-limit reset): waiting would only run into the queue timeout, so the call is refused at once
 * with the remaining pause as its Retry-After. Nothing was sent upstream.
 */
export class QuotaPausedError extends SluiceError {
  static readonly CODES = ["quota_paused"];
  readonly code = "quota_paused";
  readonly httpStatus = 429;
  override readonly name = "QuotaPausedError";

  constructor(
    readonly lane: string,
    /** Pods of the lane, all paused. */
    readonly pods: number,
    /** Until the first pod's pause ends (or the account's). */
    readonly retryAfterMs: number,
    /** The account whose pause holds the lane (a 429 with a reset pauses the whole account); undefined when its pods are paused. */
    readonly account?: string,
  ) {
    super(
      account === undefined
        ? `every pod of lane ${lane} (${pods}) is paused by a provider quota signal; retry in ${retryAfterMs} ms`
        : `account ${account} of lane ${lane} is paused by a provider quota signal; retry in ${retryAfterMs} ms`,
    );
  }
}

/** The fleet store cannot be reached and the configuration says to fail closed. */
export class StoreUnavailableError extends SluiceError {
  static readonly CODES = ["store_unavailable"];
  readonly code = "store_unavailable";
  readonly httpStatus = 503;
  override readonly name = "StoreUnavailableError";

  constructor(
    readonly detail: string,
    readonly retryAfterMs = MIN_RETRY_AFTER_MS,
  ) {
    super(`the fleet store is unavailable: ${detail}`);
  }
}

/** An option or config value is invalid; raised at construction, before anything runs. */
export class ConfigError extends SluiceError {
  static override readonly captureStack = true;
  static readonly CODES = ["config_invalid"];
  readonly code = "config_invalid";
  readonly httpStatus = 500;
  override readonly name = "ConfigError";

  constructor(
    /** Path to the bad key, e.g. `lanes.chat.reserve` or `models[2].breaker.backoff_factor`. */
    readonly path: string,
    readonly expected: string,
    readonly received: unknown,
    readonly hint?: string,
  ) {
    super(`${path}: expected ${expected}, got ${describe(received)}${hint ? ` (${hint})` : ""}`);
  }
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (typeof value === "string") return `"${value}" (string)`;
  if (typeof value === "number" || typeof value === "boolean") return `${value} (${typeof value})`;
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value;
}

/**
 * The codes of sluice's capacity refusals, each once: "not now", nothing was sent upstream. Taken
 * from the refusal classes' `CODES`, plus `draining` (the gateway refuses a draining replica's
 * calls before any class is made). In the order the dashboard and `/metrics` list them. The client
 * (which codes it replays), the metrics (`refusals_total`'s reasons) derive from it; the dashboard
 * page, served as written, keeps a copy a test compares with it.
 */
export const CAPACITY_REFUSAL_CODES: readonly SluiceErrorCode[] = [
  ...QueueFullError.CODES,
  ...KeyLimitError.CODES,
  ...RateLimitError.CODES,
  ...QuotaPausedError.CODES,
  ...QueueTimeoutError.CODES,
  ...BreakerOpenError.CODES,
  ...StoreUnavailableError.CODES,
  "draining",
] as SluiceErrorCode[];

/** Guard for {@link QueueFullError} that works across package copies. */
export const isQueueFullError = (e: unknown): e is QueueFullError =>
  isSluiceError(e) && e.code === "queue_full";
/** Guard for {@link QueueTimeoutError}. */
export const isQueueTimeoutError = (e: unknown): e is QueueTimeoutError =>
  isSluiceError(e) && e.code === "queue_timeout";
/** Guard for {@link KeyLimitError}. */
export const isKeyLimitError = (e: unknown): e is KeyLimitError => isSluiceError(e) && e.code === "key_limit";
/** Guard for {@link BreakerOpenError}. */
export const isBreakerOpenError = (e: unknown): e is BreakerOpenError =>
  isSluiceError(e) && e.code === "upstream_unavailable";
/** Guard for {@link QuotaPausedError}. */
export const isQuotaPausedError = (e: unknown): e is QuotaPausedError =>
  isSluiceError(e) && e.code === "quota_paused";
/** Guard for {@link RateLimitError}. */
export const isRateLimitError = (e: unknown): e is RateLimitError =>
  isSluiceError(e) && e.code === "rate_limit";
/** Guard for {@link ConfigError}. */
export const isConfigError = (e: unknown): e is ConfigError =>
  isSluiceError(e) && e.code === "config_invalid";
