/**
 * A rate budget (DESIGN §1, seed 004): a token bucket for `tpm` (tokens per minute) or `rpm`
 * (requests per minute). Capacity is one minute's worth; it refills continuously at
 * `perMinute / 60 000` per ms, never above capacity.
 *
 * Unlike a concurrency budget it is not given back when a call ends: a grant reserves the call's
 * estimate (`take`; a request bucket takes one per call), and the end reconciles it with what the
 * call really used (`reconcile`): an over-estimate is refunded, an under-estimate charged, so the
 * level tracks real consumption within one request's estimate. Debt is carried (the level may go
 * below zero, and then nothing fits until the refill has paid it), never forgiven.
 *
 * A refund must never let the bucket hold more than the provider's own bucket (charged each call's
 * real usage when it arrived) would: a refund corrects a charge made at the grant, and that
 * correction in the past lifts the level now in full only if the bucket never reached capacity
 * since (the refill stops there). Two bounds say how far it may lift the level, and the larger one
 * applies: the refill bound — no more than the refill has not yet paid back of the reservation (a
 * reservation held for a minute has been refilled already) — and the drawn bound (`drawn-log.ts`)
 * — up to the level of a bucket found full just after the grant and charged with every draw
 * since. While the account is busy the
 * second returns the whole over-estimate, so the tokens it held are used (issue 24: 85–90 % of the
 * account with the refill bound alone). test/property/rate.test.ts and
 * test/property/rate-refund.test.ts check that a provider charging real usage at the grant never
 * sees the bucket overdrawn.
 *
 * The interactive reserve (DESIGN §1.1, as a lane's `reserve` slots): the last `reserve` tokens
 * (or requests) of the bucket go only to calls whose own class is interactive. A call of another
 * class fits only while the bucket still holds at least `reserve` after its take, so a flood of
 * bulk calls leaves that share for the next call a person is watching; aging does not unlock it
 * (callers pass the call's own class). Everything that asks "when does it fit" asks
 * {@link RateBudget.needs}, so room, wake-ups and Retry-After agree.
 *
 * The state is plain data (`toJSON`: level, updatedAt, perMinute), so a shared store can keep it:
 * the level at time t is `min(perMinute, level + (t − updatedAt) × perMinute / 60 000)`.
 */
import { type Budget, type BudgetState, reserveFor } from "./budget.js";
import { ClassShares } from "./class-shares.js";
import { DrawnLog } from "./drawn-log.js";
import { MinuteCounter } from "./minute-counter.js";
import { BULK, type Rank } from "./priority.js";
import { refilledIn, refillMs } from "./refill.js";

/** What a rate budget counts: tokens (`cost` per call) or requests (one per call). */
export type RateUnit = "tokens" | "requests";

/** A rate budget's state as plain data. */
export interface RateState extends BudgetState {
  unit: RateUnit;
  /** Capacity and refill per minute (`limit` is the same number). */
  perMinute: number;
  /** The level at `updatedAt` (may be negative: debt). */
  level: number;
  /** What only interactive calls may take (units of the bucket). */
  reserve: number;
  /** Clock ms of the last change to `level`. */
  updatedAt: number;
}

export class RateBudget implements Budget {
  /** Never a slot count: a rate budget holds nothing in flight. */
  readonly inflight = 0;
  #level: number;
  #updatedAt: number;
  /** What was charged in the last minute, net of refunds (snapshots and metrics; not shared state). */
  readonly used = new MinuteCounter();
  /** What was drawn, sampled per second: the drawn bound of a refund (`drawn-log.ts`). */
  readonly drawn = new DrawnLog();
  /** Shares of the bucket by class, past a saturation threshold (`class-shares.ts`); null = none. */
  shares: ClassShares | null = null;
  /** Whether calls of a class wait for this bucket (the shares lend only what no waiter wants). */
  waiting: (rank: Rank) => boolean = () => true;

  constructor(
    readonly name: string,
    readonly unit: RateUnit,
    /** Capacity, and refill per minute: the `tpm` or `rpm`. */
    public perMinute: number,
    nowMs = 0,
    /** What only calls whose own class is interactive may take; below `perMinute`. */
    public reserve = 0,
  ) {
    this.#level = perMinute;
    this.#updatedAt = nowMs;
  }

  get limit(): number {
    return this.perMinute;
  }

  /** What one call of estimate `cost` takes from this bucket. */
  amount(cost: number): number {
    return this.unit === "tokens" ? cost : 1;
  }

  /** The level at `nowMs`: refilled since the last change, capped at capacity; negative in debt. */
  levelAt(nowMs: number): number {
    const refilled = this.#level + refilledIn(nowMs - this.#updatedAt, this.perMinute);
    return Math.min(this.perMinute, refilled);
  }

  /**
   * When the level reaches `amount`: -Infinity if it is there already, Infinity if it never will
   * (more than the capacity). `hasRoom` and `nextChangeAt` both ask this one expression, so the
   * timer armed for it always finds the room it was armed for.
   */
  readyAt(amount: number): number {
    if (this.#level >= amount) return Number.NEGATIVE_INFINITY;
    if (amount > this.perMinute) return Number.POSITIVE_INFINITY;
    return this.#updatedAt + refillMs(amount - this.#level, this.perMinute);
  }

  /** What the bucket keeps after a take by a call of own class `rank`: the reserve, 0 for interactive. */
  floorFor(rank: Rank): number {
    return reserveFor(rank, this.reserve);
  }

  /**
   * The level a call of estimate `cost` and own class `rank` needs before its take: its amount,
   * plus the reserve it must leave unless it is interactive. The one expression `hasRoom`,
   * `nextChangeAt` and the arrival rules (`arrival.ts`) share.
   */
  needs(cost: number, rank: Rank): number {
    return this.amount(cost) + this.floorFor(rank);
  }

  /** Whether the estimate `cost` of a call of own class `rank` is covered now (the reserve rule). */
  hasRoom(rank: Rank, cost: number, nowMs: number): boolean {
    return nowMs >= this.readyAt(this.needs(cost, rank)) && this.sharesAllow(rank, cost, nowMs);
  }

  /** Whether the class shares let a call of own class `rank` take `cost` now (true without shares). */
  sharesAllow(rank: Rank, cost: number, nowMs: number): boolean {
    const shares = this.shares;
    if (shares === null) return true;
    return shares.allows(rank, this.levelAt(nowMs) - this.amount(cost), nowMs, this.waiting);
  }

  /**
   * Sets the class shares (`null`: none): each class's share (interactive, default, bulk) and the
   * fraction of the bucket spent past which they hold. Credits start full.
   */
  setShares(shares: readonly [number, number, number] | null, above: number, nowMs: number): void {
    const same =
      shares !== null &&
      this.shares !== null &&
      this.shares.above === above &&
      this.shares.shares.every((s, i) => s === shares[i]);
    if (same) this.shares!.perMinute = this.perMinute;
    else this.shares = shares === null ? null : new ClassShares([...shares], above, this.perMinute, nowMs);
  }

  /** Reserves the estimate at the grant. */
  take(cost: number, nowMs: number, rank?: Rank): void {
    const amount = this.amount(cost);
    if (this.shares !== null && rank !== undefined) this.shares.charge(rank, amount, nowMs);
    this.#set(this.levelAt(nowMs) - amount, nowMs);
    this.used.add(amount, nowMs);
    this.drawn.draw(amount, nowMs);
  }

  /** Nothing: a reservation is settled by {@link reconcile}, never by giving a slot back. */
  give(): void {}

  /**
   * Settles a reservation of `reserved` (the estimate taken at `grantedAtMs`) with what the call
   * used: `null` when it never reached the provider (all of it is unused, a request too), else
   * the tokens it really used (a request bucket keeps its one request). Unused tokens are
   * refunded as far as the larger of the refill bound and the drawn bound allows (top of this
   * file), never above capacity; tokens used beyond the estimate are charged (debt is carried).
   */
  reconcile(reserved: number, used: number | null, nowMs: number, grantedAtMs: number): void {
    const delta = this.settlement(reserved, used, nowMs, grantedAtMs);
    const unused = this.unused(reserved, used);
    if (delta === 0 && unused === 0) return;
    const level = this.levelAt(nowMs);
    const ceiling = this.drawn.ceiling(grantedAtMs, nowMs, this.perMinute, this.amount(reserved) - unused);
    const next = settledLevel(level, delta, unused, ceiling, this.perMinute);
    if (delta < 0) this.drawn.draw(-delta, nowMs);
    if (next === level) return;
    this.#set(next, nowMs);
    this.used.add(level - next, nowMs);
  }

  /** What of the reservation a settlement finds unused (0 when the call used it all or more). */
  unused(reserved: number, used: number | null): number {
    const amount = this.amount(reserved);
    const spent = used === null ? 0 : this.unit === "tokens" ? used : amount;
    return Math.max(0, amount - spent);
  }

  /**
   * The change a settlement makes to the level before the capacity cap (what {@link reconcile}
   * applies, and what a shared store applies to the fleet's copy of the bucket): negative charges
   * the tokens used beyond the estimate, positive refunds the unused part of the reservation that
   * the refill has not yet paid back, 0 when nothing moves. Elapsed time is measured on one clock
   * (`nowMs − grantedAtMs`), so replicas whose clocks disagree compute the same bound.
   */
  settlement(reserved: number, used: number | null, nowMs: number, grantedAtMs: number): number {
    const amount = this.amount(reserved);
    const spent = used === null ? 0 : this.unit === "tokens" ? used : amount;
    if (spent > amount) return amount - spent;
    const unpaid = amount - refilledIn(nowMs - grantedAtMs, this.perMinute);
    return Math.max(0, Math.min(amount - spent, unpaid));
  }

  /**
   * Sets the level to what the fleet's copy holds (`level`, at `nowMs`): a shared store's answer
   * replaces this process's picture, which it only mirrors.
   */
  sync(level: number, nowMs: number): void {
    this.#set(Math.min(this.perMinute, level), nowMs);
  }

  /**
   * Gives back a reservation the fleet never took (`amount` as {@link amount} computed it):
   * the level rises by it, never above capacity.
   */
  restore(amount: number, nowMs: number): void {
    const level = this.levelAt(nowMs);
    const back = Math.min(amount, this.perMinute - level);
    if (back <= 0) return;
    this.#set(level + back, nowMs);
    this.used.add(-back, nowMs);
  }

  /**
   * When a call of estimate `cost` and own class `rank` will fit, if it does not now and ever can;
   * else undefined. **Default** `rank`: bulk (the latest time: a wake-up never comes too early).
   */
  nextChangeAt(nowMs: number, cost: number, rank: Rank = BULK): number | undefined {
    let at = this.readyAt(this.needs(cost, rank));
    const shares = this.shares;
    if (shares !== null && !this.sharesAllow(rank, cost, nowMs)) {
      // Held by its share: until its credit turns positive, or the bucket is no longer saturated.
      const idle = this.readyAt((1 - shares.above) * this.perMinute + this.amount(cost));
      at = Math.max(at, Math.min(shares.creditAt(rank, nowMs), idle));
    }
    // Whole ms, rounded up: still at or after the exact time, and small integers stay unboxed.
    return at > nowMs && at !== Number.POSITIVE_INFINITY ? Math.ceil(at) : undefined;
  }

  /**
   * New capacity (and interactive reserve, kept when not given) on a live bucket (a reload): the
   * level is kept, capped at the new capacity; debt stays.
   */
  reconfigure(perMinute: number, nowMs: number, reserve = this.reserve): void {
    const level = this.levelAt(nowMs);
    this.perMinute = perMinute;
    this.reserve = reserve;
    if (this.shares !== null) this.shares.perMinute = perMinute;
    this.#set(Math.min(level, perMinute), nowMs);
  }

  #set(level: number, nowMs: number): void {
    this.#level = level;
    this.#updatedAt = Math.max(this.#updatedAt, nowMs);
  }

  toJSON(): RateState {
    return {
      name: this.name,
      unit: this.unit,
      limit: this.perMinute,
      inflight: 0,
      perMinute: this.perMinute,
      level: this.#level,
      updatedAt: this.#updatedAt,
      reserve: this.reserve,
    };
  }

  /** A bucket from its plain state (what a shared store kept). */
  static fromJSON(state: RateState): RateBudget {
    const b = new RateBudget(state.name, state.unit, state.perMinute, state.updatedAt, state.reserve);
    b.#level = state.level;
    return b;
  }
}

/**
 * The level after a settlement (`settle.lua` computes the same for the fleet's copy): a charge
 * (`delta` < 0) lowers it, debt carried; a refund lifts it by `delta` (the refill bound) up to
 * `cap`, or, when the drawn bound is known (`ceiling`, `DrawnLog.ceiling`), by up to all of
 * `unused` as far as `ceiling` — whichever is higher, and never lower than it was.
 */
export function settledLevel(
  level: number,
  delta: number,
  unused: number,
  ceiling: number | undefined,
  cap: number,
): number {
  if (delta < 0) return level + delta;
  let next = Math.max(level, Math.min(level + delta, cap));
  if (ceiling !== undefined && unused > delta) next = Math.max(next, Math.min(level + unused, ceiling, cap));
  return next;
}
