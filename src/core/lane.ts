/**
 * A lane: one bounded, priority-ordered queue in front of one budget (DESIGN §1, §1.1) — an
 * endpoint and model in the library, a configured model in the gateway. It owns its waiters,
 * its reserve for interactive calls, its pods, and the measurements its snapshot reports.
 */
import type { Budget } from "./budget.js";
import type { TicketOwner } from "./lease.js";
import type { Pod } from "./pod.js";
import { INTERACTIVE } from "./priority.js";
import { HoldTime } from "./retry-after.js";
import { type QueueNode, WaitQueue } from "./wait-queue.js";
import { WindowHistogram } from "./window-histogram.js";

/** Resolved lane settings (validated by options.ts). */
export interface LaneSettings {
  limit: number;
  reserve: number;
  queueLimit: number;
  queueTimeoutMs: number;
  agingMs: number;
  fallback: string | undefined;
}

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

export class Lane<T extends QueueNode = QueueNode> {
  inflight = 0;
  readonly queue = new WaitQueue<T>();
  readonly hold = new HoldTime();
  readonly waits = new WindowHistogram();
  readonly timeouts = new WindowHistogram();
  /** When the queue last went from empty to non-empty; undefined while empty. */
  queuedSince: number | undefined = undefined;
  /** Re-dispatch budget (DESIGN §1.3) in tenths; a new lane starts full (a dead first pod). */
  retryTokens: number;
  /** Re-dispatches in progress now. */
  redispatching = 0;
  /** Who the lane's leases report their endings to (the Governor); set when it creates the lane. */
  owner: TicketOwner | null = null;

  constructor(
    readonly name: string,
    readonly settings: LaneSettings,
    /** Shared budgets on this lane's path (GPU group, gateway admission), all-or-nothing. */
    readonly groups: readonly Budget[],
    /** Endpoints serving this lane, or null when the caller picks the endpoint itself. */
    readonly pods: readonly Pod[] | null,
  ) {
    this.retryTokens = retryBank(settings.limit);
  }

  get limit(): number {
    return this.settings.limit;
  }

  /** The lane's in-flight capacity now: its limit, or less when its pods are narrower. */
  get width(): number {
    if (this.pods === null) return this.settings.limit;
    let sum = 0;
    for (const pod of this.pods) sum += pod.width.width;
    return Math.min(sum, this.settings.limit);
  }

  /**
   * The waiter this lane would serve next if a slot frees, or null. The last `reserve` slots go
   * only to waiters whose own class is interactive; aging does not unlock them.
   */
  candidate(nowMs: number): T | null {
    const free = this.settings.limit - this.inflight;
    if (free <= 0 || this.queue.size === 0) return null;
    if (free > this.settings.reserve) return this.queue.best(nowMs, this.settings.agingMs);
    return this.queue.head(INTERACTIVE);
  }

  /** Whether every shared budget on the path has room. */
  groupsHaveRoom(): boolean {
    for (const g of this.groups) if (!g.hasRoom) return false;
    return true;
  }

  /**
   * The least loaded pod that can take a call now, or null. Pods in `avoid` (those that already
   * refused this call) are chosen only when no other pod can take it.
   */
  choosePod(nowMs: number, avoid: readonly Pod[] | null = null): Pod | null {
    let best: Pod | null = null;
    let fallback: Pod | null = null;
    for (const pod of this.pods!) {
      if (!pod.available(nowMs)) continue;
      if (avoid?.includes(pod)) {
        fallback ??= pod;
        continue;
      }
      if (best === null || pod.load() < best.load()) best = pod;
    }
    return best ?? fallback;
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

  /** Keeps `queuedSince` in step with the queue (call after any change to it). */
  noteQueue(nowMs: number): void {
    if (this.queue.size === 0) this.queuedSince = undefined;
    else if (this.queuedSince === undefined) this.queuedSince = nowMs;
  }
}
