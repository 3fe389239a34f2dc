/**
 * This process's picture of the fleet's budgets: which local budget is which Redis key, what this
 * replica holds on each as Redis knows it (confirmed grants minus releases), and what the other
 * replicas hold (`others` on the budget itself, so the scheduler's room checks see the fleet).
 */
import { AccountBudget } from "../core/account.js";
import { AdmissionBudget } from "../core/admission.js";
import type { Budget, ConcurrencyBudget } from "../core/budget.js";
import type { Path } from "../core/path.js";
import { Pod } from "../core/pod.js";
import { INTERACTIVE, type Rank } from "../core/priority.js";

/** A budget whose count the fleet shares (an account's: its calls in flight). */
type Shared = ConcurrencyBudget | AdmissionBudget | Pod | AccountBudget;

export class FleetMirror {
  readonly #keyOf = new Map<Budget, string>();
  readonly #byKey = new Map<string, Shared>();
  /** This replica's count on each key, as Redis has it. */
  readonly #mine = new Map<string, number>();
  /** Release messages heard per key, ever: to discount those a script's answer may predate. */
  readonly #heard = new Map<string, number>();

  constructor(
    /** The hash tag every key starts with (`{prefix}`). */
    readonly tag: string,
  ) {}

  /** Remembers that `budget` is stored under `key`; returns it. */
  track<B extends ConcurrencyBudget | AdmissionBudget | AccountBudget>(key: string, budget: B): B {
    this.#register(budget, `${this.tag}:b:${key}`);
    return budget;
  }

  /** The fleet keys of `path` from `from` on, with each budget's limit for a call of class `rank`. */
  fleetPart(path: Path, rank: Rank, from: number): { keys: string[]; limits: number[]; budgets: Shared[] } {
    const keys: string[] = [];
    const limits: number[] = [];
    const budgets: Shared[] = [];
    for (let i = from; i < path.budgets.length; i++) {
      const budget = path.budgets[i]!;
      const key = this.#key(budget);
      if (key === undefined) continue;
      keys.push(key);
      limits.push(limitFor(budget as Shared, rank));
      budgets.push(budget as Shared);
    }
    return { keys, limits, budgets };
  }

  /** The fleet keys of `path` from `from` on. */
  fleetKeys(path: Path, from: number): string[] {
    const keys: string[] = [];
    for (let i = from; i < path.budgets.length; i++) {
      const key = this.#key(path.budgets[i]!);
      if (key !== undefined) keys.push(key);
    }
    return keys;
  }

  /** How many release messages have been heard on each of `keys` so far. */
  heard(keys: readonly string[]): number[] {
    return keys.map((k) => this.#heard.get(k) ?? 0);
  }

  /**
   * What the other replicas hold on each budget, as a script just read it; true when room grew.
   * The answer and the release messages travel on different connections, so a release heard
   * while the script was under way may already be in the answer or not: it is discounted
   * (`heardBefore`, from `heard()` when the script was sent). Erring low is safe — the next
   * grant asks Redis anyway — while erring high would leave a waiter with room waiting.
   */
  setOthers(
    budgets: readonly Shared[],
    counts: readonly number[],
    keys?: readonly string[],
    heardBefore?: readonly number[],
  ): boolean {
    let freed = false;
    budgets.forEach((b, i) => {
      const since =
        keys === undefined || heardBefore === undefined
          ? 0
          : (this.#heard.get(keys[i]!) ?? 0) - heardBefore[i]!;
      const others = Math.max(0, Number(counts[i] ?? 0) - since);
      if (others < b.others) freed = true;
      b.others = others;
    });
    return freed;
  }

  /** This replica's confirmed grants (+1) or releases (−1) on `keys`. */
  confirmed(keys: readonly string[], delta: number): void {
    for (const key of keys) this.#mine.set(key, Math.max(0, (this.#mine.get(key) ?? 0) + delta));
  }

  /** Every key this replica knows, what it holds on each, and the budgets (heartbeat). */
  all(): { keys: string[]; counts: number[]; budgets: Shared[] } {
    const keys = [...this.#byKey.keys()];
    return {
      keys,
      counts: keys.map((k) => this.#mine.get(k) ?? 0),
      budgets: keys.map((k) => this.#byKey.get(k)!),
    };
  }

  /** Another replica released one call on each of `keys`; true when one of them is ours. */
  released(keys: readonly string[]): boolean {
    let any = false;
    for (const key of keys) {
      this.#heard.set(key, (this.#heard.get(key) ?? 0) + 1);
      const budget = this.#byKey.get(key);
      if (budget === undefined) continue;
      budget.others = Math.max(0, budget.others - 1);
      any = true;
    }
    return any;
  }

  /** Redis is unreachable under `local`: each budget keeps 1 ÷ `replicas` of its limit here. */
  enterOutage(replicas: number): void {
    for (const budget of this.#byKey.values()) {
      const limit = limitFor(budget, INTERACTIVE);
      // An account with no in-flight cap has no limit to divide.
      budget.others = limit >= UNBOUNDED ? 0 : limit - Math.max(1, Math.floor(limit / replicas));
    }
  }

  /** Back from an outage: the next script's answer sets `others` again. */
  leaveOutage(): void {
    for (const budget of this.#byKey.values()) budget.others = 0;
  }

  #key(budget: Budget): string | undefined {
    const known = this.#keyOf.get(budget);
    if (known !== undefined) return known;
    if (!(budget instanceof Pod)) return undefined;
    // Pods are made by the registry, not the store: one URL is one pod, fleet-wide too.
    const key = `${this.tag}:b:pod:${budget.id}`;
    this.#register(budget, key);
    return key;
  }

  #register(budget: Shared, key: string): void {
    this.#keyOf.set(budget, key);
    this.#byKey.set(key, budget);
  }
}

/** What stands for "no bound" in a script's arguments (an account without `max_inflight`). */
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

/** A shared budget's limit for a call of class `rank` (a lane's reserve is for interactive calls). */
function limitFor(budget: Shared, rank: Rank): number {
  if (budget instanceof Pod) return budget.width.width;
  if (budget instanceof AccountBudget) return Math.min(UNBOUNDED, budget.width.width);
  if (budget instanceof AdmissionBudget) return budget.maxInflight;
  return budget.limit - (rank === INTERACTIVE ? 0 : budget.reserve);
}
