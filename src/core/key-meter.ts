/**
 * A key's token and request budgets on its calls' paths (issue 24): its own `tpm` / `rpm` and its
 * tenant's, each an {@link AccountBudget} without an in-flight cap (`key-options.ts`), so the store
 * takes, reconciles and (in a fleet) shares them exactly as it does an account's.
 *
 * A lane's paths are built once, for every caller; a key's budgets depend on the caller. So each
 * key has a {@link KeyMeter} that maps a lane's path to the same path with the key's budgets
 * inserted at the end of the lane's part (before the pod's part, so a re-dispatch keeps them),
 * made once per lane path and kept while that path lives.
 *
 * A key's budget never makes a call wait (a key at its budget must not hold a lane's queue for
 * the keys behind it): an arrival is refused at once unless the key's buckets cover it on top of
 * what the key's calls already queued will take ({@link KeyMeter.refusal}), with the refill time as
 * its Retry-After. So a waiter normally finds its key's room at its grant; only usage above the
 * estimates (debt) or another replica of a fleet spending the same bucket can hold it there, and
 * then for no longer than the refill of that difference.
 */
import type { AccountBudget } from "./account.js";
import { RateLimitError } from "./errors.js";
import { Path } from "./path.js";
import type { Rank } from "./priority.js";
import type { RateBudget } from "./rate-budget.js";
import { MINUTE_MS, refillMs } from "./refill.js";
import { retryAfterFloor } from "./retry-after.js";

// The key's meter rides on its arrival budget (`ArrivalBudget.meter`), declared here rather than in
// budget.ts: the meter needs paths and accounts, which need budget.ts (no import cycle).
declare module "./budget.js" {
  interface ArrivalBudget {
    /** The key's token and request budgets (its own, its tenant's) on its calls' paths; absent = none. */
    meter?: KeyMeter | undefined;
  }
}

/** One key's or tenant's budget, with what the waiters counted against it have yet to take. */
export class KeyBudget {
  /** Token estimates of the calls queued against this budget (they take them at their grant). */
  queuedTokens = 0;
  /** Calls queued against this budget (one request each). */
  queuedCalls = 0;

  constructor(
    readonly budget: AccountBudget,
    /** Whose budget: a key's own, or its tenant's (shared by the tenant's keys). */
    readonly scope: "key" | "tenant",
    /** The key id or tenant name. */
    readonly owner: string,
  ) {}

  /** The token and request buckets. */
  buckets(): RateBudget[] {
    const b = this.budget;
    const out: RateBudget[] = [];
    if (b.tokens !== null) out.push(b.tokens);
    if (b.requests !== null) out.push(b.requests);
    return out;
  }

  /** What the calls queued here will take from `bucket`. */
  queuedIn(bucket: RateBudget): number {
    return bucket.unit === "tokens" ? this.queuedTokens : this.queuedCalls;
  }
}

/** A key's budgets (its own, then its tenant's) and the paths its calls are granted on. */
export class KeyMeter {
  readonly #paths = new WeakMap<Path, Path>();

  constructor(readonly parts: readonly KeyBudget[]) {}

  /** Whether every bucket of the key has room for a call of estimate `cost` now. */
  hasRoom(rank: Rank, cost: number, nowMs: number): boolean {
    for (const part of this.parts) if (!part.budget.hasRoom(rank, cost, nowMs)) return false;
    return true;
  }

  /** When the key's buckets (the latest of them) cover a call of estimate `cost`, if not now. */
  nextChangeAt(nowMs: number, cost: number, rank: Rank): number | undefined {
    let at: number | undefined;
    for (const part of this.parts) {
      const change = part.budget.nextChangeAt(nowMs, cost, rank);
      if (change !== undefined && (at === undefined || change > at)) at = change;
    }
    return at;
  }

  /** `path` with the key's budgets at the end of its lane's part (made once per path). */
  pathOf(path: Path): Path {
    let keyed = this.#paths.get(path);
    if (keyed === undefined) {
      const own = this.parts.map((p) => p.budget);
      const at = path.podStart;
      const budgets = [...path.budgets.slice(0, at), ...own, ...path.budgets.slice(at)];
      keyed = new Path(path.lane, budgets, at + own.length, path.pod);
      this.#paths.set(path, keyed);
    }
    return keyed;
  }

  /** A call of estimate `cost` joins (`+1`) or leaves (`-1`) the queue: its reservation-to-be. */
  queue(cost: number, sign: 1 | -1): void {
    // Never below 0: a reload may give a key a budget while its calls wait (they counted nowhere).
    for (const part of this.parts) {
      part.queuedTokens = Math.max(0, part.queuedTokens + sign * cost);
      part.queuedCalls = Math.max(0, part.queuedCalls + sign);
    }
  }

  /**
   * The refusal for an arrival of estimate `cost` on lane `lane`, or null: each bucket must cover
   * the call on top of what the key's queued calls will take, now (a key's budget makes no call
   * wait). Retry-After: when the refill will have covered it; a call larger than the bucket
   * never fits (a minute, as a model's bucket says).
   */
  refusal(lane: string, cost: number, nowMs: number): RateLimitError | null {
    for (const part of this.parts) {
      for (const bucket of part.buckets()) {
        const needed = bucket.amount(cost);
        const ahead = part.queuedIn(bucket);
        const level = bucket.levelAt(nowMs);
        const refuse = (retryMs: number, reason: RateLimitError["reason"]) =>
          new RateLimitError(
            lane,
            bucket.name,
            bucket.unit,
            needed,
            bucket.perMinute,
            Math.floor(level - ahead),
            retryAfterFloor(retryMs),
            reason,
          );
        if (needed > bucket.perMinute) return refuse(MINUTE_MS, "exceeds_capacity");
        // Not `readyAt`: the calls ahead may together exceed the capacity and still fit in turn.
        const short = needed + ahead - level;
        if (short > 0) return refuse(refillMs(short, bucket.perMinute), "no_wait");
      }
    }
    return null;
  }
}
