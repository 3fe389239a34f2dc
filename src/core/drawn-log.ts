/**
 * What a token or request bucket has drawn, and when (issue 24, "a provider account used to the
 * last token"): a running total of every take and every charge beyond an estimate, sampled once a
 * second (the total before the second's first draw), the last {@link DRAWN_SECONDS} seconds kept.
 *
 * Why a bucket needs it: a refund corrects the past. The provider charged a call's real usage when
 * it arrived; the bucket charged the estimate then. Correcting that charge in the past lifts the
 * bucket's level now by the refund — unless the bucket reached its capacity since the grant, which
 * would have wasted part of it (the refill stops at the cap). Since the grant, the provider's
 * level is at least that of a bucket found full just after the grant and charged only with what
 * came after it; so the refund may lift the level up to that fresh bucket's level (never lower
 * than it is). {@link DrawnLog.ceiling} computes a lower bound of it from the samples: for each
 * second with draws since the grant, capacity + the refill after that second − what was drawn
 * from its start on (a second without draws is bounded by the next one with draws). While the
 * account is busy the level is near zero and that ceiling far above it: the whole over-estimate
 * comes back, and the tokens it held are used. `rate-budget.ts` applies the rule, `settle.lua`
 * the same to the fleet's copy (fields `d` and `x<slot>` of the bucket's hash).
 *
 * Only what was drawn is counted, never what was refunded: counting more than was drawn makes the
 * bound lower, so the rule stays safe however refunds interleave.
 */
import { refilledIn } from "./refill.js";

/** Seconds of samples kept: a call held longer than this is refunded by the older rule only. */
export const DRAWN_SECONDS = 300;

/**
 * How far before a grant's time the sample is read: a fleet replica measures the time since a
 * grant on its own clock and Redis maps it to its own, so the grant may have happened up to this
 * much earlier than it computes (the confirm's and the settlement's trips differ by less).
 */
export const GRANT_SKEW_MS = 2_000;

/** The first second whose draws may have come after a grant at `grantedAtMs` (skew allowed for). */
export function firstSecond(grantedAtMs: number): number {
  return Math.floor((grantedAtMs - GRANT_SKEW_MS) / 1000);
}

function slot(second: number): number {
  return ((second % DRAWN_SECONDS) + DRAWN_SECONDS) % DRAWN_SECONDS;
}

export class DrawnLog {
  /** Everything drawn so far (takes and charges; refunds never subtract). */
  total = 0;
  /** Each slot's second and the total before its first draw: made at the first draw (4.8 KB), so an idle bucket costs nothing. */
  #second: Float64Array | null = null;
  #before: Float64Array | null = null;

  /** Counts a draw of `amount` at `nowMs` (a take, or usage beyond an estimate). */
  draw(amount: number, nowMs: number): void {
    if (!(amount > 0)) return;
    if (this.#second === null) {
      this.#second = new Float64Array(DRAWN_SECONDS).fill(Number.NaN);
      this.#before = new Float64Array(DRAWN_SECONDS);
    }
    const second = Math.floor(nowMs / 1000);
    const i = slot(second);
    if (this.#second[i] !== second) {
      this.#second[i] = second;
      this.#before![i] = this.total;
    }
    this.total += amount;
  }

  /**
   * The ceiling a refund of a call granted at `grantedAtMs` may lift the level to at `nowMs`, for a
   * bucket of `perMinute` (capacity and refill): a lower bound of the level of a bucket found full
   * just after the grant and charged with every draw since, and with the call's own `spent`
   * (the provider charged it when the call arrived there, which may be a second or more after
   * the grant: each term subtracts it, so the bound holds whenever it arrived). Undefined when
   * the grant is older than the samples kept (then the refund falls back to the refill bound).
   */
  ceiling(grantedAtMs: number, nowMs: number, perMinute: number, spent: number): number | undefined {
    const first = firstSecond(grantedAtMs);
    const last = Math.floor(nowMs / 1000);
    // Every second with draws in [first, last] still has its sample only within the ring.
    if (last - first >= DRAWN_SECONDS) return undefined;
    let low = perMinute - spent;
    const seconds = this.#second;
    const before = this.#before;
    if (seconds === null || before === null) return low; // nothing drawn ever
    for (let s = first; s <= last; s++) {
      const i = slot(s);
      if (seconds[i] !== s) continue;
      // Any time in second s: at most everything drawn from its start, at least the refill after it.
      const refill = refilledIn(nowMs - (s + 1) * 1000, perMinute);
      low = Math.min(low, perMinute + refill - (this.total - before[i]!) - spent);
    }
    return low;
  }
}
