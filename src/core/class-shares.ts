/**
 * Shares of a token or request bucket by class, work-conserving (issue 24): `RateBudget.shares`
 * (a lane's `tpmShares` / `rpmShares`, an account's the same; `shareAbove` the threshold).
 *
 * The rule: while the bucket is not saturated — a take leaves more than `1 − above` of its
 * capacity — any class takes idle tokens. Beyond that each class is held to its share by a
 * credit: class c's credit refills at `share_c × capacity` per minute up to {@link BURST_MINUTES}
 * of that, and each take by c is charged to it (down to one call and one burst in debt). A
 * saturated take by c fits while its credit is positive, or while no other class with waiters
 * has more credit than c: so a class alone gets the whole bucket (work-conserving), with every
 * class backlogged each gets its share of the refill, and a class that comes back, its credit
 * full and the others' spent, is served first until its credit is down to theirs.
 *
 * `tpm_reserve` is the special case of an interactive floor: the last `reserve` of the bucket only
 * interactive calls may take. Shares keep it as it is; they decide who takes above that floor.
 *
 * Memory store only: a fleet store refuses shares (`SharesNotBuiltError`), as the fleet's buckets
 * would need each class's credit in Redis.
 */
import type { Rank } from "./priority.js";
import { refilledIn, refillMs } from "./refill.js";

/** Minutes of its share a class's credit holds at most: what it may take at once after a pause. */
export const BURST_MINUTES = 0.25;

/**
 * Each class's share of a bucket (issue 24, `class-shares.ts`): fractions that add up to 1; a
 * class left out has none (it takes only what the others leave).
 */
export interface ClassShareOptions {
  interactive?: number;
  default?: number;
  bulk?: number;
}

/** The shares past this fraction of the bucket spent, when not given. */
export const DEFAULT_SHARE_ABOVE = 0.8;

/** Shares resolved: every class named (0 for one left out). */
export type ResolvedShares = Required<ClassShareOptions>;

/** Resolved shares as the core's table: interactive, default, bulk. */
export function shareTable(s: ResolvedShares): [number, number, number] {
  return [s.interactive, s.default, s.bulk];
}

/** Class ranks 0 (interactive), 1 (default), 2 (bulk). */
export type ClassRank = Rank;

export const CLASSES: readonly ClassRank[] = [0, 1, 2];

/** A share table that does not add up: each share in [0, 1], together 1. */
export class ClassSharesError extends Error {
  override readonly name = "ClassSharesError";
  constructor(
    readonly shares: readonly number[],
    readonly above: number,
  ) {
    super(
      `class shares must be three numbers in [0, 1] that add up to 1 (interactive, default, bulk) and share_above in (0, 1]; got [${shares.join(", ")}], ${above}`,
    );
  }
}

export class ClassShares {
  readonly #levels: number[];
  readonly #at: number[];

  constructor(
    /** Each class's share of the bucket: interactive, default, bulk; together 1. */
    readonly shares: readonly [number, number, number],
    /** The fraction of the bucket spent beyond which shares hold. */
    readonly above: number,
    /** The bucket's capacity and refill per minute. */
    public perMinute: number,
    nowMs = 0,
  ) {
    const sum = shares.reduce((n, s) => n + s, 0);
    if (shares.some((s) => !(s >= 0 && s <= 1)) || Math.abs(sum - 1) > 1e-9 || !(above > 0 && above <= 1))
      throw new ClassSharesError(shares, above);
    this.#levels = shares.map((s) => s * perMinute * BURST_MINUTES);
    this.#at = shares.map(() => nowMs);
  }

  /** Class `rank`'s credit at `nowMs`: refilled at its share of the rate, at most its burst. */
  levelOf(rank: ClassRank, nowMs: number): number {
    const rate = this.shares[rank] * this.perMinute;
    const refilled = this.#levels[rank]! + refilledIn(nowMs - this.#at[rank]!, rate);
    return Math.min(rate * BURST_MINUTES, refilled);
  }

  /** Whether a take leaving `levelAfter` in the bucket is past the saturation threshold. */
  saturated(levelAfter: number): boolean {
    return levelAfter < (1 - this.above) * this.perMinute;
  }

  /**
   * Whether class `rank` may take now when the bucket would hold `levelAfter` after the take (the
   * bucket's own room is the bucket's to check); `waiting(d)` says whether class d has waiters on
   * the bucket.
   */
  allows(rank: ClassRank, levelAfter: number, nowMs: number, waiting: (rank: ClassRank) => boolean): boolean {
    if (!this.saturated(levelAfter)) return true;
    const own = this.levelOf(rank, nowMs);
    if (own > 0) return true;
    for (const d of CLASSES) if (d !== rank && waiting(d) && this.levelOf(d, nowMs) > own) return false;
    return true;
  }

  /**
   * When class `rank`'s credit turns positive by refill (−Infinity when it is already), Infinity
   * for a class with no share: the time a saturated take held by its share may fit again.
   */
  creditAt(rank: ClassRank, nowMs: number): number {
    const level = this.levelOf(rank, nowMs);
    if (level > 0) return Number.NEGATIVE_INFINITY;
    const rate = this.shares[rank] * this.perMinute;
    if (rate <= 0) return Number.POSITIVE_INFINITY;
    // Just past zero: one token's hundredth of credit.
    return nowMs + refillMs(0.01 - level, rate);
  }

  /** Charges a take of `amount` by class `rank` to its credit: at most one call and one burst in debt. */
  charge(rank: ClassRank, amount: number, nowMs: number): void {
    const burst = this.shares[rank] * this.perMinute * BURST_MINUTES;
    this.#levels[rank] = Math.max(this.levelOf(rank, nowMs) - amount, -(burst + amount));
    this.#at[rank] = nowMs;
  }
}
