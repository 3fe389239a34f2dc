/**
 * The interactive reserve of a token or request bucket in the config (`tpm_reserve`,
 * `rpm_reserve` on a model or an account): what its calls of other classes must leave in the
 * bucket (DESIGN §1.1). Unwritten, it is the model's reserve share — `reserve ÷
 * max_concurrent_requests` of the bucket (0 for an unbounded model) — and an account's is the
 * largest share among its models (`core/rate-options.ts` says why). Written beside no bucket it is
 * refused (it would keep nothing); at or above the capacity it is clamped to capacity − 1 with a
 * warning, as `reserve` is to `max_concurrent_requests − 1`.
 */
import { clampRateReserve, rateReserve } from "../core/rate-options.js";
import type { Checker } from "./checks.js";
import { formatPath, type Segment } from "./issues.js";

/** The reserve of the bucket `bucket` (`tpm` / `rpm`, `perMinute` undefined when absent) at `at`. */
export function bucketReserve(
  c: Checker,
  at: readonly Segment[],
  bucket: "tpm" | "rpm",
  perMinute: number | undefined,
  written: number | undefined,
  share: number,
): number {
  const key = `${bucket}_reserve`;
  if (perMinute === undefined) {
    if (written !== undefined)
      c.error([...at, key], `no ${key} without ${bucket} (it keeps part of that bucket)`, written);
    return 0;
  }
  const reserve = rateReserve(perMinute, written, share);
  const clamped = clampRateReserve(reserve, perMinute);
  if (clamped < reserve)
    c.warn({
      path: formatPath([...at, key]),
      message: `${key} ${reserve} clamped to ${clamped} (${bucket} ${perMinute} − 1: other classes keep some of the bucket)`,
    });
  return clamped;
}
