/**
 * The in-memory store: one process's budgets as plain objects. Every operation is synchronous,
 * so the scheduler's grant path pays no promise and no round trip.
 */
import { AccountBudget, type AccountSettings } from "../core/account.js";
import { AdmissionBudget } from "../core/admission.js";
import { ArrivalBudget, type Budget, ConcurrencyBudget } from "../core/budget.js";
import type { Path } from "../core/path.js";
import { INTERACTIVE, type Rank } from "../core/priority.js";
import { RateBudget, type RateUnit } from "../core/rate-budget.js";
import type { Store } from "../core/store.js";

export class MemoryStore implements Store {
  readonly description = "memory";
  readonly fleet = false;
  /** `commit` and `give` below are the budgets' own counts: a solo path skips the loop (`Grants.inPlace`). */
  readonly countsInPlace: boolean = true;
  readonly #concurrency = new Map<string, ConcurrencyBudget>();
  readonly #arrival = new Map<string, ArrivalBudget>();
  readonly #admission = new Map<string, AdmissionBudget>();
  readonly #rate = new Map<string, RateBudget>();
  readonly #accounts = new Map<string, AccountBudget>();

  concurrency(key: string, limit: number, reserve = 0, name = key): ConcurrencyBudget {
    let budget = this.#concurrency.get(key);
    if (budget === undefined) {
      budget = new ConcurrencyBudget(name, limit, reserve);
      this.#concurrency.set(key, budget);
    }
    return budget;
  }

  admission(key: string, maxInflight: number, maxQueued: number, name = key): AdmissionBudget {
    let budget = this.#admission.get(key);
    if (budget === undefined) {
      budget = new AdmissionBudget(name, maxInflight, maxQueued);
      this.#admission.set(key, budget);
    }
    return budget;
  }

  arrival(key: string, limit: number, maxRank: Rank = INTERACTIVE, name = key): ArrivalBudget {
    let budget = this.#arrival.get(key);
    if (budget === undefined) {
      budget = new ArrivalBudget(name, limit, maxRank);
      this.#arrival.set(key, budget);
    }
    return budget;
  }

  rate(key: string, unit: RateUnit, perMinute: number, nowMs: number, name = key): RateBudget {
    let budget = this.#rate.get(key);
    if (budget === undefined) {
      budget = new RateBudget(name, unit, perMinute, nowMs);
      this.#rate.set(key, budget);
    }
    return budget;
  }

  account(key: string, settings: AccountSettings, nowMs: number, name = key): AccountBudget {
    let budget = this.#accounts.get(key);
    if (budget === undefined) {
      budget = new AccountBudget(name, settings, nowMs);
      this.#accounts.set(key, budget);
    }
    return budget;
  }

  take(path: Path, rank: Rank, cost: number, nowMs: number, from = 0): boolean {
    if (!path.hasRoom(rank, cost, nowMs, from)) return false;
    this.commit(path, cost, nowMs, from, rank);
    return true;
  }

  commit(path: Path, cost: number, nowMs: number, from = 0, rank?: Rank): void {
    const budgets = path.budgets;
    for (let i = from; i < budgets.length; i++) budgets[i]!.take(cost, nowMs, rank);
  }

  give(path: Path, cost: number, nowMs: number, from = 0): void {
    const budgets = path.budgets;
    for (let i = from; i < budgets.length; i++) budgets[i]!.give(cost, nowMs);
  }

  reconcile(
    path: Path,
    reserved: number,
    used: number | null | undefined,
    nowMs: number,
    grantedAtMs: number,
  ): void {
    if (used === undefined) return; // the estimate stays charged
    for (const b of path.metered) b.reconcile!(reserved, used, nowMs, grantedAtMs);
  }

  *budgets(): Iterable<Budget | ArrivalBudget> {
    yield* this.#concurrency.values();
    yield* this.#arrival.values();
    yield* this.#admission.values();
    yield* this.#rate.values();
    yield* this.#accounts.values();
  }
}
