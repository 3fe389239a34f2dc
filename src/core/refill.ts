/**
 * The refill of a token or request bucket (DESIGN §1, seed 004), written once: a bucket of
 * `perMinute` gains `perMinute / 60 000` a ms, continuously. Its two directions — what a span
 * refills, and how long a shortfall takes to refill — are the level of a bucket
 * (`rate-budget.ts`), a class's credit (`class-shares.ts`), the drawn bound of a refund
 * (`drawn-log.ts`), and every Retry-After and reset time a bucket answers (`arrival.ts`,
 * `key-meter.ts`, `rate-limits.ts`). The Lua scripts keep their own copy (`redis/lua/_prelude.lua`:
 * `bucket_level`), in their own language.
 */

/** One minute in ms: a bucket's capacity is one minute's refill. */
export const MINUTE_MS = 60_000;

/** What a bucket of `perMinute` refills in `ms` (nothing for a span that is negative). */
export function refilledIn(ms: number, perMinute: number): number {
  return (Math.max(0, ms) * perMinute) / MINUTE_MS;
}

/** How long a bucket of `perMinute` takes to refill `units` (a shortfall, a debt, a whole bucket). */
export function refillMs(units: number, perMinute: number): number {
  return (units * MINUTE_MS) / perMinute;
}
