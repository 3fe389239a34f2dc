/**
 * The room a replica's own passes leave on a lane budget for the other replicas, folded into the
 * budget's `others` (the one number the scheduler's room check reads): priority and fairness
 * across replicas are decided in Redis (`grant-path.lua`, `grant-many.lua`), and without the
 * fold every pass here would grant locally what Redis then refuses — a round trip per event for
 * nothing.
 *
 * - **Better waiters** of other replicas, after a grant was refused for them (`ahead`): counted
 *   as held until they leave (a message on the waiters channel) or a fresh answer.
 * - **The fair share** (issue 22, defect 5): while other replicas wait on the lane with calls of
 *   the same class or better, this replica holds at most an equal share of it. Every lane grant's
 *   answer says how much of the limit lies beyond that share (the *floor*), and `others` is kept
 *   at least that high, so this replica's passes grant only below its share — in practice, when
 *   one of its own calls ends. A release heard from another replica lowers the real count under
 *   the floor, not the floor: without it each such message made this replica ask again and be
 *   refused (one refusal per grant in the fairness test). The floor goes with the next fresh
 *   answer, or when a replica's waiters there are all gone (then this one asks again).
 *
 * `others` = max(real count + better waiters, floor); the padding up to the floor is kept apart,
 * so the real part can still move with release messages underneath it.
 */
interface Shared {
  others: number;
}

export class HoldBack {
  /** Better waiters folded in, per lane key. */
  readonly #ahead = new Map<string, number>();
  /** The least `others` may be while other replicas wait (limit − this replica's fair share). */
  readonly #floor = new Map<string, number>();
  /** How much of `others` is padding up to the floor. */
  readonly #pad = new Map<string, number>();

  /** `budget.others` without the padding: the real count as last heard, and better waiters. */
  unpadded(key: string, budget: Shared): number {
    return budget.others - (this.#pad.get(key) ?? 0);
  }

  /** `budget.others` as the other replicas' calls alone (last heard), nothing held back for them. */
  real(key: string, budget: Shared): number {
    return Math.max(0, this.unpadded(key, budget) - (this.#ahead.get(key) ?? 0));
  }

  /** Sets `budget.others` to `unpadded`, padded up to the floor. */
  set(key: string, budget: Shared, unpadded: number): void {
    const pad = Math.max(0, (this.#floor.get(key) ?? 0) - unpadded);
    if (pad > 0) this.#pad.set(key, pad);
    else this.#pad.delete(key);
    budget.others = unpadded + pad;
  }

  /** A fresh answer from Redis on `key`: nothing folded in any more (the caller sets the real count). */
  fresh(key: string): void {
    this.#ahead.delete(key);
    this.#floor.delete(key);
    this.#pad.delete(key);
  }

  /** A refused grant's answer: `better` waiters of other replicas wait on the lane; leave them room. */
  ahead(key: string, budget: Shared, better: number): void {
    if (better <= 0) return;
    const unpadded = this.unpadded(key, budget) + better - (this.#ahead.get(key) ?? 0);
    this.#ahead.set(key, better);
    this.set(key, budget, unpadded);
  }

  /** A lane grant's answer: `floor` is the lane's limit less this replica's fair share (0: no rivals). */
  floor(key: string, budget: Shared, floor: number): void {
    if (floor > 0) this.#floor.set(key, floor);
    else this.#floor.delete(key);
    this.set(key, budget, this.unpadded(key, budget));
  }

  /**
   * Another replica's waiters on the lane went down (`none`: all gone, or one of its flows left,
   * so this replica's weighted share grew): the better waiters this replica left room for are
   * given up (it asks again), and the floor too when `none`. True when `others` went down.
   */
  left(key: string, budget: Shared, none: boolean): boolean {
    const before = budget.others;
    const held = this.#ahead.get(key);
    this.#ahead.delete(key);
    if (none) this.#floor.delete(key);
    this.set(key, budget, Math.max(0, this.unpadded(key, budget) - (held ?? 0)));
    return budget.others < before;
  }

  /** Every fold dropped (an outage sets `others` itself). */
  clear(): void {
    this.#ahead.clear();
    this.#floor.clear();
    this.#pad.clear();
  }
}
