/**
 * The in-memory store: one process's budgets as plain objects. Every operation is synchronous,
 * so the scheduler's grant path pays no promise and no round trip.
 */
import { AdmissionBudget } from "../core/admission.js";
import { ArrivalBudget, type Budget, ConcurrencyBudget } from "../core/budget.js";
import type { Path } from "../core/path.js";
import { INTERACTIVE, type Rank } from "../core/priority.js";
import type { Store } from "./store.js";

export class MemoryStore implements Store {
  readonly description = "memory";
  readonly #concurrency = new Map<string, ConcurrencyBudget>();
  readonly #arrival = new Map<string, ArrivalBudget>();
  readonly #admission = new Map<string, AdmissionBudget>();

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

  take(path: Path, rank: Rank, cost: number, nowMs: number, from = 0): boolean {
    if (!path.hasRoom(rank, cost, nowMs, from)) return false;
    const budgets = path.budgets;
    for (let i = from; i < budgets.length; i++) budgets[i]!.take(cost, nowMs);
    return true;
  }

  give(path: Path, cost: number, nowMs: number, from = 0): void {
    const budgets = path.budgets;
    for (let i = from; i < budgets.length; i++) budgets[i]!.give(cost, nowMs);
  }

  *budgets(): Iterable<Budget | ArrivalBudget> {
    yield* this.#concurrency.values();
    yield* this.#arrival.values();
    yield* this.#admission.values();
  }
}
