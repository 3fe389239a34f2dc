/**
 * Budgets: the limits on a call's path (DESIGN §1 table) — its lane, the pod it is sent to, GPU
 * groups, accounts, the gateway's bound, token and request rates — all answer the same questions,
 * so the scheduler grants and releases through one shape whatever the kind. `cost` is the call's
 * token estimate (0 when the caller gave none): a concurrency budget ignores it (one call is one
 * slot), a token bucket counts it, a request bucket counts one per call (`rate-budget.ts`).
 */
import type { Flow } from "./fair-queue.js";
import { INTERACTIVE, type Rank } from "./priority.js";

/** One limit on a path. */
export interface Budget {
  /** Name as it appears in snapshots, errors and store keys. */
  readonly name: string;
  /**
   * Whether a call of own class `rank` costing `cost` fits now. The interactive reserve is this
   * question's answer for a lane (aging does not unlock it: pass the call's own class).
   */
  hasRoom(rank: Rank, cost: number, nowMs: number): boolean;
  /** Takes the call's slot (or its estimate); `rank` is its own class, for a bucket's class shares. */
  take(cost: number, nowMs: number, rank?: Rank): void;
  /**
   * Gives back the slot `take` took; never below zero (releasing twice must never add capacity).
   * A metered budget gives nothing back here: its reservation is settled by `reconcile`.
   */
  give(cost: number, nowMs: number): void;
  /**
   * When this budget gains room by itself for a call of own class `rank` costing `cost` (a refill,
   * a cooldown or pause ending); undefined if only a release frees it, or if it has room already.
   * The class matters to a token bucket's interactive reserve (`rate-budget.ts`).
   */
  nextChangeAt(nowMs: number, cost: number, rank: Rank): number | undefined;
  /**
   * Present on metered budgets only (token and request buckets, accounts): settles the estimate
   * `reserved` taken at `grantedAtMs` with what the call used — `null` when it never reached the
   * provider (refunded), else its real tokens (refund or debt). Called once per grant, before `give`.
   */
  reconcile?(reserved: number, used: number | null, nowMs: number, grantedAtMs: number): void;
  /** Plain JSON state (what a shared store keeps). */
  toJSON(): BudgetState;
}

/** A budget's state as plain data. */
export interface BudgetState {
  name: string;
  limit: number;
  inflight: number;
  reserve?: number;
}

/**
 * The reserve rule (DESIGN §1.1), the one place it is written: of a budget's `reserve`, what a
 * call of own class `rank` must leave unused — all of it, unless the call is interactive. A
 * lane's slots (`ConcurrencyBudget.limitFor`), a token or request bucket's level
 * (`RateBudget.floorFor`), the fleet's copies of both (`store/redis/mirror.ts`, `rates.ts`) and the
 * queue-full refusal's numbers (`arrival.ts`) all ask it.
 */
export function reserveFor(rank: Rank, reserve: number): number {
  return rank === INTERACTIVE ? 0 : reserve;
}

/**
 * Calls in flight against a limit, with an optional reserve that only interactive calls may use
 * (DESIGN §1.1). Lanes, GPU groups and the gateway's in-flight bound (`AdmissionBudget`) are these.
 */
export class ConcurrencyBudget implements Budget {
  /** Calls this process holds. */
  inflight = 0;
  /** Calls other processes hold, as a fleet store last saw them (0 with the memory store). */
  others = 0;

  constructor(
    readonly name: string,
    /** Calls allowed in flight at once; `Infinity` for a tag with no bound. */
    public limit: number,
    /** The last `reserve` slots go only to calls whose own class is interactive. */
    public reserve = 0,
  ) {}

  /**
   * How many calls may be in flight, fleet-wide, when a call of own class `rank` takes its slot:
   * the limit less the reserve that call may not use (`reserveFor`).
   */
  limitFor(rank: Rank): number {
    return this.limit - reserveFor(rank, this.reserve);
  }

  hasRoom(rank: Rank): boolean {
    return this.inflight + this.others < this.limitFor(rank);
  }

  take(): void {
    this.inflight++;
  }

  give(): void {
    if (this.inflight > 0) this.inflight--;
  }

  nextChangeAt(): undefined {
    return undefined;
  }

  toJSON(): BudgetState {
    return { name: this.name, limit: this.limit, inflight: this.inflight, reserve: this.reserve };
  }
}

/**
 * A budget counted from a call's arrival to its end — in flight plus queued (DESIGN §1 table): a
 * key's (tenant's) `max_inflight`, and the gateway's `max_concurrency + max_queued`. It is
 * checked on arrival (`admits`) and never blocks a grant: the waiter it admitted already counts.
 */
export class ArrivalBudget {
  inflight = 0;
  queued = 0;
  /** The flow its calls share their class by (its own, or its tenant's; fair-queue.ts); null = anonymous. */
  flow: Flow | null = null;
  /**
   * Its calls in flight by lane, indexed by the lane's `slot`: what a lane's snapshot sums by flow
   * to show each key's (tenant's) part of the lane (snapshot.ts `laneFlows`). An array, not a
   * map, so a grant pays one integer increment.
   */
  readonly onLane: number[] = [];

  constructor(
    readonly name: string,
    /** Calls allowed in flight plus queued. */
    public limit: number,
    /** The highest class a call on this budget may claim; higher claims are lowered to it. */
    public maxRank: Rank = INTERACTIVE,
  ) {}

  /** Calls other processes hold on this budget: none here (a fleet store's key counts them). */
  get elsewhere(): number {
    return 0;
  }

  /** Whether one more arrival fits. */
  get full(): boolean {
    return this.inflight + this.queued + this.elsewhere >= this.limit;
  }

  /** One of its calls was granted on the lane of slot `slot`. */
  granted(slot: number): void {
    this.inflight++;
    const on = this.onLane;
    while (on.length <= slot) on.push(0); // a lane made after this key's first call: once
    on[slot]!++;
  }

  /** One of its calls granted on the lane of slot `slot` ended; never below zero. */
  ended(slot: number): void {
    if (this.inflight > 0) this.inflight--;
    const on = this.onLane;
    if (slot < on.length && on[slot]! > 0) on[slot]!--;
  }

  /** Its calls in flight on the lane of slot `slot`. */
  inflightOn(slot: number): number {
    return this.onLane[slot] ?? 0;
  }

  /** A class, lowered to the highest this budget allows (the one place the cap is applied). */
  cap(rank: Rank): Rank {
    return rank < this.maxRank ? this.maxRank : rank;
  }

  toJSON(): BudgetState & { queued: number } {
    return { name: this.name, limit: this.limit, inflight: this.inflight, queued: this.queued };
  }
}
