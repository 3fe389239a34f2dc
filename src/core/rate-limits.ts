/**
 * The token and request buckets a call on a lane crosses — its own `tpm` / `rpm`, then its
 * account's — as plain numbers: what the arrival rules check (`arrival.ts`) and what the
 * gateway's `RateLimit` / `x-ratelimit-*` answer headers report.
 */
import { AccountBudget } from "./account.js";
import { bucketsOf } from "./buckets-of.js";
import type { Lane } from "./lane.js";
import { INTERACTIVE, type Rank } from "./priority.js";
import { refillMs } from "./refill.js";

export { bucketsOf };

/** One bucket's numbers now. */
export interface RateLimitInfo {
  /** Whose bucket: the lane's own, its account's, or the calling key's or its tenant's (`key-meter.ts`). */
  scope: "lane" | "account" | "key" | "tenant";
  /** The lane's or the account's name. */
  name: string;
  unit: "tokens" | "requests";
  perMinute: number;
  /**
   * What a call of the class asked about may still take now, in whole units: the level, less the
   * interactive reserve for a call that is not interactive (0 while in debt or at the reserve).
   */
  remaining: number;
  /** Until it is full again, in ms. */
  resetMs: number;
}

/** Every bucket on `lane`'s path, with its numbers at `nowMs`. */
export function rateLimitsOf(lane: Lane, nowMs: number, rank: Rank = INTERACTIVE): RateLimitInfo[] {
  const out: RateLimitInfo[] = [];
  for (const budget of lane.metered) {
    const scope = budget instanceof AccountBudget ? "account" : "lane";
    for (const b of bucketsOf(budget)) {
      const level = b.levelAt(nowMs);
      out.push({
        scope,
        name: budget.name,
        unit: b.unit,
        perMinute: b.perMinute,
        remaining: Math.max(0, Math.floor(level - b.floorFor(rank))),
        resetMs: Math.ceil(refillMs(b.perMinute - level, b.perMinute)),
      });
    }
  }
  return out;
}
