/**
 * A lane: one bounded, priority-ordered queue in front of one budget (DESIGN §1, §1.1) — an
 * endpoint and model in the library, a configured model in the gateway. It owns its waiters,
 * its reserve for interactive calls, its pods, and the measurements its snapshot reports.
 */
import type { AccountBudget } from "./account.js";
import { bucketsOf } from "./buckets-of.js";
import type { Budget, ConcurrencyBudget } from "./budget.js";
import type { KeyMeter } from "./key-meter.js";
import type { LaneSettings } from "./options.js";
import type { FailureInput } from "./outcome.js";
import { lanePaths, Path } from "./path.js";
import type { Pod } from "./pod.js";
import { BULK, DEFAULT_RANK, INTERACTIVE, type Rank } from "./priority.js";
import { HoldTime } from "./retry-after.js";
import { type QueueNode, WaitQueue } from "./wait-queue.js";
import { WindowHistogram } from "./window-histogram.js";

/**
 * Re-dispatch budget, counted in tenths of a re-dispatch so it stays exact: each success earns
 * one tenth, each re-dispatch costs ten (DESIGN §1.3: ≤ 1.1 attempts per call).
 */
export const RETRY_EARN = 1;
export const RETRY_COST = 10;
/**
 * The re-dispatch bank: at most max(3, 20 % of the lane's limit) re-dispatches (DESIGN §1.3).
 * Only successes refill it, so when every pod refuses, upstream attempts are bounded by
 * calls + the bank: within 1.1 × once ten times the bank in calls have been refused.
 */
export function retryBank(limit: number): number {
  return Math.max(3, Math.floor(0.2 * limit)) * RETRY_COST;
}

/** `saturated` = queued > 0 held continuously for this long (DESIGN §4). */
export const SATURATED_AFTER_MS = 60_000;

/**
 * Who a lane's leases report their endings to: the Governor, which owns timers and promises.
 * Generic in the lease type so the lane needs nothing from lease.ts (no import cycle).
 */
export interface LaneOwner<T> {
  end(ticket: T, failure: FailureInput | undefined, outcomeKnown: boolean): void;
  retry(ticket: T, failure: FailureInput | undefined): Promise<boolean>;
  /** The caller gave up on a re-dispatch that is waiting for a pod. */
  abandon(ticket: T): void;
}

export class Lane<T extends QueueNode = QueueNode> {
  readonly queue = new WaitQueue<T>();
  readonly hold = new HoldTime();
  readonly waits = new WindowHistogram();
  readonly timeouts = new WindowHistogram();
  /** The lane's part of every path: its own budget, then the shared groups on its path. */
  lanePath!: Path;
  /** One path per pod (aligned with `pods`), or `[lanePath]` when the caller picks the endpoint. */
  paths!: readonly Path[];
  /**
   * Token estimates of the waiters queued, by own class: what the waiters ahead of an arrival
   * will take from the lane's token buckets before it (the can't-cover-in-time rule).
   */
  readonly queuedTokens: [number, number, number] = [0, 0, 0];
  /** When the queue last went from empty to non-empty; undefined while empty. */
  queuedSince: number | undefined = undefined;
  /** Re-dispatch budget (DESIGN §1.3) in tenths; a new lane starts full (a dead first pod). */
  retryTokens: number;
  /** Re-dispatches in progress now. */
  redispatching = 0;
  /** Who the lane's leases report their endings to (the Governor); set when it creates the lane. */
  owner: LaneOwner<T> | null = null;
  /** The provider account this lane belongs to (also on its path), or null. */
  account: AccountBudget | null = null;
  /** Waiters whose key has token or request budgets (`key-meter.ts`): their refills can wake the lane. */
  keyMetered = 0;
  /**
   * Its index among its registry's lanes, never reused: where a key counts its calls in flight
   * on this lane (`ArrivalBudget.onLane`). Set by the registry that makes the lane.
   */
  slot = 0;

  constructor(
    readonly name: string,
    public settings: LaneSettings,
    /** The lane's own concurrency budget: its limit and interactive reserve. */
    readonly budget: ConcurrencyBudget,
    /** Shared budgets on this lane's path (GPU group, account, gateway), all-or-nothing. */
    shared: readonly Budget[],
    /** Endpoints serving this lane, or null when the caller picks the endpoint itself. */
    public pods: readonly Pod[] | null,
  ) {
    this.#buildPaths(shared);
    this.retryTokens = retryBank(settings.limit);
  }

  /**
   * New settings, shared budgets and pods on a live lane (a config reload). Waiters keep their
   * place; calls in flight give back the path they took, so no count is lost or doubled.
   */
  reconfigure(settings: LaneSettings, shared: readonly Budget[], pods: readonly Pod[] | null): void {
    this.settings = settings;
    this.budget.limit = settings.limit;
    this.budget.reserve = settings.reserve;
    this.pods = pods;
    this.#buildPaths(shared);
    this.retryTokens = Math.min(this.retryTokens, retryBank(settings.limit));
  }

  #buildPaths(shared: readonly Budget[]): void {
    const laneBudgets = [this.budget, ...shared];
    this.lanePath = new Path(this.name, laneBudgets, laneBudgets.length, null);
    this.paths = this.pods === null ? [this.lanePath] : lanePaths(this.name, laneBudgets, this.pods);
  }

  /** The budgets on this lane's path whose room depends on a call's tokens (its own and its account's buckets). */
  get metered(): readonly Budget[] {
    return this.lanePath.metered;
  }

  get inflight(): number {
    return this.budget.inflight;
  }

  get limit(): number {
    return this.budget.limit;
  }

  /**
   * Whether this lane changes by itself only at its waiters' queue deadlines: no pods (no
   * cooldowns or pauses) and a path of its own concurrency budget alone, which gains room only
   * from a release (no bucket to refill, no group). The scheduler skips such a lane's other
   * wake-ups, and the timer need not move when its waiters come and go.
   */
  get changesOnlyAtDeadlines(): boolean {
    return this.pods === null && this.lanePath.solo !== null && this.keyMetered === 0;
  }

  /** The lane's in-flight capacity now: its limit, or less when its pods are narrower. */
  get width(): number {
    if (this.pods === null) return this.budget.limit;
    let sum = 0;
    for (const pod of this.pods) sum += pod.width.width;
    return Math.min(sum, this.budget.limit);
  }

  /**
   * The waiter this lane would serve next if a slot frees, or null. The lane's budget answers
   * which classes still fit (the reserve rule lives there); aging does not unlock the reserve.
   * Inside a class, flows (keys, tenants) take turns by weight (`WaitQueue.next`).
   */
  candidate(nowMs: number): T | null {
    if (this.queue.size === 0) return null;
    if (this.budget.hasRoom(DEFAULT_RANK)) return this.queue.best(nowMs, this.settings.agingMs);
    if (this.budget.hasRoom(INTERACTIVE)) return this.queue.next(INTERACTIVE);
    return null;
  }

  /**
   * Who else to try when `c`, this lane's candidate, finds no room: the next waiter whose own
   * class is interactive (the first, or the fair choice among flows), when `c` is not one and the
   * lane has token or request buckets — their interactive reserve is closed to `c` even once
   * aging has raised it (DESIGN §1.1), as {@link candidate} turns to that waiter for the lane's
   * reserve slots. Null otherwise.
   */
  reserveCandidate(c: T): T | null {
    if (c.rank === INTERACTIVE || this.metered.length === 0) return null;
    return this.queue.next(INTERACTIVE);
  }

  /**
   * When a bucket's class shares hold `held` (estimate `cost`) back (its class is past its share while others
   * wait: `class-shares.ts`), the next waiters of the other classes, best class first; else none.
   * The held waiter keeps no bucket for itself then: the classes the shares let go are served.
   */
  sharedOut(held: T, cost: number, nowMs: number): T[] {
    if (this.metered.length === 0) return [];
    let holds = false;
    for (const budget of this.metered)
      for (const b of bucketsOf(budget))
        if (b.shares !== null && !b.sharesAllow(held.rank, cost, nowMs)) holds = true;
    if (!holds) return [];
    const out: T[] = [];
    for (const r of [0, 1, 2] as const) {
      if (r === held.rank) continue;
      const next = this.queue.next(r);
      if (next !== null) out.push(next);
    }
    return out;
  }

  /**
   * The path a call of own class `rank` would be granted on now, or null: every budget on it has
   * room, and among pods the least loaded wins. Pods in `avoid` (those that already refused this
   * call) are chosen only when no other pod can take it. `podOnly` checks just the pods' part
   * (a re-dispatch keeps its lane slot).
   */
  choosePath(
    rank: Rank,
    nowMs: number,
    cost: number,
    avoid: readonly Pod[] | null = null,
    podOnly = false,
    /** The caller's key's budgets (`key-meter.ts`): checked with the lane's part, and on the path returned. */
    meter: KeyMeter | null = null,
  ): Path | null {
    if (meter === null) return this.#choosePath(rank, nowMs, cost, avoid, podOnly);
    if (!podOnly && !meter.hasRoom(rank, cost, nowMs)) return null;
    const path = this.#choosePath(rank, nowMs, cost, avoid, podOnly);
    return path === null ? null : meter.pathOf(path);
  }

  #choosePath(
    rank: Rank,
    nowMs: number,
    cost: number,
    avoid: readonly Pod[] | null,
    podOnly: boolean,
  ): Path | null {
    const lanePath = this.lanePath;
    if (!podOnly && !lanePath.hasRoom(rank, cost, nowMs)) return null;
    if (this.pods === null) return podOnly ? null : lanePath;
    let best: Path | null = null;
    let fallback: Path | null = null;
    for (const path of this.paths) {
      if (!path.hasRoom(rank, cost, nowMs, path.podStart)) continue;
      const pod = path.pod!;
      if (avoid?.includes(pod)) {
        fallback ??= path;
        continue;
      }
      if (best === null || pod.load() < best.pod!.load()) best = path;
    }
    return best ?? fallback;
  }

  /**
   * When a budget on one of this lane's paths next gains room by itself (cooldown, pause, refill)
   * for a call of own class `rank` costing `cost` (the lane's next waiter's, with its key's `meter`).
   */
  nextChangeAt(nowMs: number, cost: number, rank: Rank, meter?: KeyMeter | null): number | undefined {
    let at: number | undefined;
    for (const path of this.paths) {
      const change = path.nextChangeAt(nowMs, cost, rank);
      if (change !== undefined && (at === undefined || change < at)) at = change;
    }
    // The waiter's key's buckets: they hold it only after usage above the estimates or, in a
    // fleet, another replica's calls (`key-meter.ts`), and then until they refill.
    const keyed = meter?.nextChangeAt(nowMs, cost, rank);
    return keyed !== undefined && (at === undefined || keyed < at) ? keyed : at;
  }

  /**
   * The next time a waiter's effective class rises (aging), among the heads of the classes that
   * can still rise. Only a metered lane needs it: there the next waiter's estimate decides whether
   * a bucket has room, so a waiter aging past another can make a grant possible by itself.
   */
  nextAgingAt(nowMs: number): number | undefined {
    const agingMs = this.settings.agingMs;
    let at: number | undefined;
    for (let rank = DEFAULT_RANK; rank <= BULK; rank++) {
      const head = this.queue.head(rank as Rank);
      if (head === null) continue;
      const steps = Math.floor((nowMs - head.arrivedAt) / agingMs);
      if (steps >= rank) continue; // already interactive
      const next = head.arrivedAt + (steps + 1) * agingMs;
      if (at === undefined || next < at) at = next;
    }
    return at;
  }

  /** Pods whose breaker is open now. */
  openPods(): number {
    let n = 0;
    if (this.pods !== null) for (const pod of this.pods) if (pod.breaker.kind !== "closed") n++;
    return n;
  }

  /** At most half of a lane's pods (at least one) may be open at once (DESIGN §1.4). */
  mayOpenAnother(): boolean {
    if (this.pods === null) return true;
    return this.openPods() < Math.max(1, Math.floor(this.pods.length / 2));
  }

  /** True when every pod is tripped, so arrivals should go to the fallback lane. */
  allTripped(nowMs: number): boolean {
    if (this.pods === null || this.pods.length === 0) return false;
    for (const pod of this.pods) if (!pod.breaker.isTripped(nowMs)) return false;
    return true;
  }

  /**
   * When no pod can take a call because each is either paused by a quota signal or tripped, and
   * at least one is paused — or the lane's account is paused: the ms until the lane may send
   * again. Undefined otherwise.
   */
  pausedFor(nowMs: number): number | undefined {
    const account = this.account;
    if (account !== null && account.quotaUntil > nowMs) {
      // The whole account is paused: nothing of this lane goes out before the pause ends.
      return Math.max(account.quotaUntil - nowMs, this.#podsPausedFor(nowMs) ?? 0);
    }
    return this.#podsPausedFor(nowMs);
  }

  #podsPausedFor(nowMs: number): number | undefined {
    if (this.pods === null || this.pods.length === 0) return undefined;
    let first: number | undefined;
    for (const pod of this.pods) {
      if (pod.quotaUntil > nowMs) {
        const left = pod.quotaUntil - nowMs;
        if (first === undefined || left < first) first = left;
      } else if (!pod.breaker.isTripped(nowMs)) return undefined;
    }
    return first;
  }

  /** Keeps `queuedSince` in step with the queue (call after any change to it). */
  noteQueue(nowMs: number): void {
    if (this.queue.size === 0) this.queuedSince = undefined;
    else if (this.queuedSince === undefined) this.queuedSince = nowMs;
  }
}
