/**
 * Where budgets are counted (DESIGN §1, §5). The scheduler decides *who* is granted, in priority
 * order; the store decides *whether* a path's budgets have room and takes them all at once.
 *
 * The memory store (the embedded default) answers at once, so a grant stays synchronous: no
 * promise per grant. A fleet store (Redis, several replicas sharing one budget) implements the
 * same interface: `take` becomes one atomic script over every budget on the path, with time from
 * the store, and budgets are found by name so every replica counts against the same key.
 */
import type { AccountBudget, AccountSettings } from "./account.js";
import type { AdmissionBudget } from "./admission.js";
import type { ArrivalBudget, Budget, ConcurrencyBudget } from "./budget.js";
import type { Clock } from "./clock.js";
import type { Event } from "./events.js";
import type { LaneWaiting } from "./lane-waiting.js";
import type { Path } from "./path.js";
import type { SharedPodState } from "./pod.js";
import type { Rank } from "./priority.js";
import type { RateBudget, RateUnit } from "./rate-budget.js";

/**
 * What every store implements: the budgets, and taking and giving them. A store shared by several
 * processes implements `FleetStore` as well; callers tell the two apart with `isFleetStore`.
 */
export interface Store {
  /** What to show in snapshots and `/readyz`: `memory`, or a URL without its password. */
  readonly description: string;
  /** Whether this store is a `FleetStore` (`isFleetStore`): false for one process's store. */
  readonly fleet: boolean;
  /**
   * Whether `commit` and `give` are nothing but the budgets' own in-place counts (the memory
   * store): the scheduler then takes and gives a path of one concurrency budget (`Path.solo`) on
   * that budget directly, without the store's loop over the path (`Grants.inPlace`). A store that
   * does anything more on a take or a give (mirrors it, confirms it, counts it) says false; so
   * does a subclass of the memory store that overrides either.
   */
  readonly countsInPlace: boolean;
  /**
   * The concurrency budget stored under `key` (e.g. `lane:chat`, `group:gb10`), created on first
   * use with display name `name`: one object per key, so a budget listed by several lanes is one
   * budget. A later call with another limit gets the first one (callers check for conflicts).
   */
  concurrency(key: string, limit: number, reserve?: number, name?: string): ConcurrencyBudget;
  /** The admission bound (in flight across lanes, and admitted requests) stored under `key`. */
  admission(key: string, maxInflight: number, maxQueued: number, name?: string): AdmissionBudget;
  /** The arrival budget (in flight + queued) stored under `key`, created on first use. */
  arrival(key: string, limit: number, maxRank?: Rank, name?: string): ArrivalBudget;
  /**
   * The token or request bucket stored under `key` (e.g. `tpm:lane:chat`), created full on first
   * use: capacity and refill `perMinute`. Its state is plain data (`RateState`: level,
   * updatedAt, perMinute) — what a shared store keeps.
   */
  rate(key: string, unit: RateUnit, perMinute: number, nowMs: number, name?: string): RateBudget;
  /**
   * The provider account stored under `key` (`account:NAME`): in-flight cap (adaptive), token and
   * request buckets, quota pause — one budget, on the path of every lane of the account.
   */
  account(key: string, settings: AccountSettings, nowMs: number, name?: string): AccountBudget;
  /**
   * Takes `cost` from every budget of `path` from index `from` on — all or nothing. Returns
   * whether it took them. The caller has already chosen the waiter (priority order is the
   * scheduler's); the store re-checks room, because in a fleet another replica may have taken it.
   */
  take(path: Path, rank: Rank, cost: number, nowMs: number, from?: number): boolean;
  /**
   * Takes `cost` from every budget of `path` from index `from` on without checking again: the
   * scheduler's grant, which has just found room on this path (`Lane.choosePath`) in the same
   * synchronous step. Checking twice on the hottest path bought nothing.
   */
  commit(path: Path, cost: number, nowMs: number, from?: number, rank?: Rank): void;
  /**
   * Gives back the slots `take` took from `path` from index `from` on. Metered budgets (token and
   * request buckets, accounts' buckets) give nothing back here: see `reconcile`.
   */
  give(path: Path, cost: number, nowMs: number, from?: number): void;
  /**
   * Settles the reservation a call of estimate `reserved`, granted at `grantedAtMs`, holds on the
   * metered budgets of `path` (`path.metered`), once per grant, before `give`: `used` null = it
   * never reached the provider (refunded), undefined = the estimate stays charged, a number = its
   * real tokens (the difference refunded or charged; debt is carried). A refund never exceeds
   * what the refill has not yet paid back of the reservation (`RateBudget.reconcile`).
   */
  reconcile(
    path: Path,
    reserved: number,
    used: number | null | undefined,
    nowMs: number,
    grantedAtMs: number,
  ): void;
  /** Every budget the store holds (snapshots, tests). */
  budgets(): Iterable<Budget | ArrivalBudget>;
}

/**
 * A store several processes share (Redis): every grant is confirmed with the fleet before the
 * caller has its lease, a refused one is rolled back, and the store and the Governor tell each
 * other about pods' adaptive state, waiters and freed room (`governor/fleet-hooks.ts` wires them,
 * in one place).
 */
export interface FleetStore extends Store {
  readonly fleet: true;
  /** `take` and `commit` are local only (`confirm` asks the fleet): never counted in place. */
  readonly countsInPlace: false;
  /**
   * Confirms with the fleet what `take` took locally. The scheduler's pass stays synchronous;
   * the Governor resolves a waiter only once this says yes, and on no rolls the take back and
   * puts the waiter back in line (`Scheduler.requeue`). `cost` is the call's estimate: what it takes from the token and request buckets on the path.
   * `effective` is the call's effective class (aging included; default `rank`): the fleet leaves
   * room on the lane for better waiters of other processes before granting it.
   */
  confirm(path: Path, rank: Rank, from?: number, cost?: number, effective?: number): Promise<boolean>;
  /**
   * Takes a bounded key's slot (in flight + queued) in the fleet for a call that was just admitted, granted or queued (`confirm` follows for a grant). Rejects with the
   * refusal — `KeyLimitError` when the other processes hold the rest of the bound,
   * `StoreUnavailableError` under `closed` — and the Governor then ends the call with it before
   * its caller has a lease. Undefined when there is nothing to ask (no bound).
   */
  arrive(key: ArrivalBudget): Promise<void> | undefined;
  /**
   * Gives back locally what a refused `confirm` took (its concurrency slots; `confirm` itself has already given the buckets back and set them to the fleet's levels).
   */
  rollback(path: Path, cost: number, nowMs: number, from?: number): void;
  /** Its replica id and whether Redis answers (`connected`, or the outage mode in force). */
  status(): { replica: string; mode: "connected" | "local" | "open" | "closed" };
  /**
   * The clock the Governor schedules on, so what the store reads from Redis (bucket levels,
   * quota pauses) lands on the scheduler's timeline.
   */
  useClock(clock: Clock): void;
  /** Tells the other processes a pod's new adaptive state (a cut, a breaker change). */
  sharePod(id: string, state: SharedPodState): void;
  /**
   * The ids of the pods this process serves. The store reads the kept state of each one it has
   * not met yet (now if started, at start, and at each heartbeat for pods a reload added), so a process started after a cut or a trip starts from it (`onPodState`).
   */
  watchPods(source: () => Iterable<string>): void;
  /**
   * Where this process's waiting calls are counted per lane budget and effective class, with
   * the flows waiting in each, for the advertisement other processes' grants read (priority and
   * weighted fair shares across them, lane-waiting.ts).
   */
  watchWaiters(source: () => Iterable<LaneWaiting>): void;
  /** This process's waiters changed (coalesced to one write per event-loop turn). */
  waitersChanged(): void;
  /** Another process changed a pod's adaptive state. */
  readonly onPodState: Event<{ id: string; state: SharedPodState }>;
  /** Other processes may have freed room (re-run a pass). */
  readonly onChange: Event<void>;
}

/** Whether `store` is shared by a fleet: the one test callers make (never for single members). */
export function isFleetStore(store: Store): store is FleetStore {
  return store.fleet;
}
