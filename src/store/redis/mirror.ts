/**
 * This process's picture of the fleet's budgets: which local budget is which Redis key, what this
 * replica holds on each as Redis knows it (confirmed grants minus releases), and what the other
 * replicas hold (`others` on the budget itself, so the scheduler's room checks see the fleet).
 */
import { AccountBudget } from "../../core/account.js";
import { AdmissionBudget } from "../../core/admission.js";
import type { Budget, ConcurrencyBudget } from "../../core/budget.js";
import type { Path } from "../../core/path.js";
import { Pod } from "../../core/pod.js";
import { INTERACTIVE, type Rank } from "../../core/priority.js";
import { HoldBack } from "./holdback.js";
import { FleetKeyBudget } from "./key-budget.js";
import { freedBy } from "./releases.js";
import type { LaneAnswer } from "./script-calls.js";

/** The part of a path the fleet shares, from a start on (`FleetMirror.#shape`). */
interface PathShape {
  readonly keys: readonly string[];
  readonly budgets: readonly Shared[];
  readonly waitKey: string | undefined;
}

/** A budget whose count the fleet shares (an account's: its calls in flight; a key's: in flight + queued). */
type Shared = ConcurrencyBudget | AdmissionBudget | Pod | AccountBudget | FleetKeyBudget;

export class FleetMirror {
  readonly #keyOf = new Map<Budget | FleetKeyBudget, string>();
  readonly #byKey = new Map<string, Shared>();
  readonly #waitKeyOf = new Map<Budget, string>();
  /** This replica's count on each key, as Redis has it. */
  readonly #mine = new Map<string, number>();
  /** Release messages heard per key, ever: to discount those a script's answer may predate. */
  readonly #heard = new Map<string, number>();
  /**
   * The room left on lane budgets for other replicas, folded into `others`: their better waiters
   * after a refusal, and the lane beyond this replica's fair share while they wait (`HoldBack`).
   */
  readonly #hold = new HoldBack();
  /** Each path's fleet part, per start (`#shape`). */
  #shapes = new WeakMap<Path, PathShape[]>();
  /** A look at the waiters is scheduled (`lookAgainSoon`). */
  #looking = false;

  constructor(
    /** The hash tag every key starts with (`{prefix}`). */
    readonly tag: string,
    /**
     * Room grew in the mirror: the scheduler must look at its waiters again (the store's
     * `onChange`). Every path that lowers `others` ends here, so no answer from Redis can show
     * room without a pass following it (issue 22, defect 1: a grant's answer that showed another
     * replica's silent release refreshed the mirror and nothing looked again — its waiters sat
     * until their queue timeout, since every later read found nothing "freed").
     */
    readonly lookAgain: () => void = () => {},
  ) {}

  /**
   * Runs `lookAgain` once, after this event-loop turn's continuations (a refused grant's waiter
   * is back in its queue by then, so the pass sees it), however many answers showed room.
   */
  lookAgainSoon(): void {
    if (this.#looking) return;
    this.#looking = true;
    setImmediate(() => {
      this.#looking = false;
      this.lookAgain();
    });
  }

  /** Remembers that `budget` is stored under `key`; returns it. */
  track<B extends ConcurrencyBudget | AdmissionBudget | AccountBudget | FleetKeyBudget>(
    key: string,
    budget: B,
  ): B {
    this.#register(budget, `${this.tag}:b:${key}`);
    return budget;
  }

  /**
   * The fleet keys of `path` from `from` on, with each budget's limit for a call of class `rank`,
   * and the lane's waiters key when the path's lane part is asked for (priority across replicas).
   * The keys and budgets are the path's shape (kept, shared: not to be changed); the limits and
   * the spare room are this call's.
   */
  fleetPart(
    path: Path,
    rank: Rank,
    from: number,
  ): {
    keys: readonly string[];
    limits: number[];
    spare: number[];
    budgets: readonly Shared[];
    waitKey: string | undefined;
  } {
    const { keys, budgets, waitKey } = this.#shape(path, from);
    const limits = new Array<number>(keys.length);
    const spare = new Array<number>(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const budget = budgets[i]!;
      const mine = this.#mine.get(keys[i]!) ?? 0;
      limits[i] = limitFor(budget, rank, mine);
      // Room left beyond this call's slot as this process knows the fleet (`FleetReleases.flushFor`).
      spare[i] = limits[i]! - budget.others - mine - 1;
    }
    return { keys, limits, spare, budgets, waitKey };
  }

  /** The fleet keys of `path` from `from` on (kept, shared: not to be changed). */
  fleetKeys(path: Path, from: number): readonly string[] {
    return this.#shape(path, from).keys;
  }

  /**
   * Which of `path`'s budgets from `from` on the fleet shares, their keys and the lane's waiters
   * key: worked out once per path and start (asked at every grant and release, and a path never
   * changes), again after a budget is registered.
   */
  #shape(path: Path, from: number): PathShape {
    let byFrom = this.#shapes.get(path);
    if (byFrom === undefined) {
      byFrom = [];
      this.#shapes.set(path, byFrom);
    }
    let shape = byFrom[from];
    if (shape === undefined) {
      const keys: string[] = [];
      const budgets: Shared[] = [];
      for (let i = from; i < path.budgets.length; i++) {
        const key = this.#key(path.budgets[i]!);
        if (key === undefined) continue;
        keys.push(key);
        budgets.push(path.budgets[i] as Shared);
      }
      const first = path.budgets[0];
      const waitKey = from === 0 && first !== undefined && keys.length > 0 ? this.waitKey(first) : undefined;
      shape = { keys, budgets, waitKey };
      byFrom[from] = shape;
    }
    return shape;
  }

  /** The waiters hash of a lane budget this store shares (`{P}:w:<budget>`), or undefined. */
  waitKey(budget: Budget): string | undefined {
    if (
      budget instanceof Pod ||
      budget instanceof AdmissionBudget ||
      budget instanceof AccountBudget ||
      budget instanceof FleetKeyBudget
    )
      return undefined;
    // Asked at every grant: made once per budget (a budget's key never changes).
    let waitKey = this.#waitKeyOf.get(budget);
    if (waitKey === undefined) {
      waitKey = this.#keyOf.get(budget)?.replace(`${this.tag}:b:`, `${this.tag}:w:`);
      if (waitKey !== undefined) this.#waitKeyOf.set(budget, waitKey);
    }
    return waitKey;
  }

  /**
   * A lane grant's answer (`lane`: the better waiters of other replicas and the lane's limit less
   * this replica's fair share): a refusal leaves room for those waiters,
   * and any answer keeps this replica's passes within its share (`HoldBack`), so it neither
   * refuses in a loop nor takes the room it leaves.
   */
  laneAnswer(key: string, lane: LaneAnswer, granted: boolean): void {
    const budget = this.#byKey.get(key);
    if (budget === undefined) return;
    if (!granted) this.#hold.ahead(key, budget, lane.better);
    this.#hold.floor(key, budget, lane.beyondShare);
  }

  /**
   * Waiters of another replica left the lane budget whose waiters hash is `waitKey` (`none`: all
   * of them, or a flow left there — either way this replica's fair share may have grown, so the
   * floor goes too): true when this replica held back for them, and now looks again.
   */
  waitersLeftOn(waitKey: string, none: boolean): boolean {
    const key = waitKey.replace(`${this.tag}:w:`, `${this.tag}:b:`);
    const budget = this.#byKey.get(key);
    return budget !== undefined && this.#hold.left(key, budget, none);
  }

  /**
   * A key (flow) started waiting here on the lane budget whose waiters hash is `waitKey`: this
   * replica's weighted share there grew (flow-advert.ts), so the floor it held back to goes, and
   * the scheduler looks again if that left room.
   */
  shareGrew(waitKey: string): void {
    if (this.waitersLeftOn(waitKey, true)) this.lookAgainSoon();
  }

  /** How many release messages have been heard on each of `keys` so far. */
  heard(keys: readonly string[]): number[] {
    return keys.map((k) => this.#heard.get(k) ?? 0);
  }

  /** Whether a release message was heard on one of `keys` since `heard()` returned `before`. */
  heardSince(keys: readonly string[], before: readonly number[]): boolean {
    return keys.some((k, i) => (this.#heard.get(k) ?? 0) !== before[i]);
  }

  /**
   * What the other replicas hold on each budget, as a script just read it; true when room grew,
   * and then the waiters are looked at again (`lookAgainSoon`). The answer and the release messages travel on different connections, so a release heard
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
      if (keys === undefined) {
        if (others < b.others) freed = true;
        b.others = others;
        return;
      }
      const key = keys[i]!;
      if (others < this.#hold.unpadded(key, b)) freed = true;
      this.#hold.fresh(key); // a fresh answer: nothing folded in (a lane grant's answer folds again)
      b.others = others;
    });
    if (freed) this.lookAgainSoon();
    return freed;
  }

  /** What this replica holds on `key` as Redis has it. */
  mine(key: string): number {
    return this.#mine.get(key) ?? 0;
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

  /** A message on the waiters channel (`advertise.lua`): true when this replica held back for them. */
  waitersLeft(message: string, replica: string): boolean {
    if (message.startsWith(`${replica}\n`)) return false;
    let any = false;
    for (const line of message.split("\n").slice(1)) {
      // `*`: a flow left there (weighted shares, flow-advert.ts): this replica's part grew.
      const [key = "", left, flowLeft] = line.split(" ");
      any = this.waitersLeftOn(key, left === "0" || flowLeft === "*") || any;
    }
    return any;
  }

  /** A release message (`release.lua`): true when a budget of this replica's gained room. */
  releasedBy(message: string, replica: string): boolean {
    const freed = freedBy(message, replica);
    return freed !== null && this.released(freed);
  }

  /** Another replica released `count` calls on each `key`; true when one of them is ours. */
  released(freed: ReadonlyArray<readonly [key: string, count: number]>): boolean {
    let any = false;
    for (const [key, count] of freed) {
      this.#heard.set(key, (this.#heard.get(key) ?? 0) + count);
      const budget = this.#byKey.get(key);
      if (budget === undefined) continue;
      const before = budget.others;
      // Under a fair-share floor the real count moves, the room this replica sees does not.
      this.#hold.set(key, budget, Math.max(0, this.#hold.unpadded(key, budget) - count));
      any = budget.others < before || any;
    }
    return any;
  }

  /**
   * Redis is unreachable under `local`: each budget's `others` becomes what `othersFor` leaves this
   * replica (`redis/outage.ts`: its share, less what the others held when it last heard).
   */
  enterOutage(othersFor: (key: string, limit: number, heard: number) => number): void {
    for (const [key, budget] of this.#byKey) {
      const limit = limitFor(budget, INTERACTIVE);
      const heard = this.#hold.real(key, budget); // not the room held back for other replicas
      // An account with no in-flight cap has no limit to divide.
      budget.others = limit >= UNBOUNDED ? 0 : othersFor(key, limit, heard);
    }
    this.#hold.clear();
  }

  /** Back from an outage: the next script's answer sets `others` again. */
  leaveOutage(): void {
    this.#hold.clear();
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
    this.#shapes = new WeakMap(); // a path's shape may include this budget now
  }
}

/** What stands for "no bound" in a script's arguments (an account without `max_inflight`). */
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

/**
 * A shared budget's limit for a call of class `rank` (a lane's is its own `limitFor`: less the
 * reserve the call may not use).
 * A pod whose breaker is not closed takes exactly one probe fleet-wide: its limit is what this
 * replica already holds there (`mine`, calls from before the trip) plus one, so another
 * replica's call on the pod refuses this replica's probe.
 */
function limitFor(budget: Shared, rank: Rank, mine = 0): number {
  if (budget instanceof Pod) return budget.breaker.kind === "closed" ? budget.width.width : mine + 1;
  if (budget instanceof AccountBudget) return Math.min(UNBOUNDED, budget.width.width);
  if (budget instanceof FleetKeyBudget) return budget.limit;
  return budget.limitFor(rank);
}
