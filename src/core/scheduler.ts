/**
 * The atomic grant across a path (DESIGN §1, STYLE G11): a waiter is granted only when every
 * budget on its path — lane (with its reserve), shared groups, a pod with width to spare — has
 * room, and then takes them all at once through the store (`grant`, grants.ts); everything is
 * given back in one place (`giveBack`). Pure and synchronous with the memory store: the caller passes
 * `nowMs`, and the shell owns promises and the one timer (`nextWakeAt`).
 *
 * Invariants (property-tested in test/property): no budget above its limit; no lost wake-up (after
 * every operation no waiter that could be granted is left waiting); a cancelled or timed-out
 * waiter leaves no residue; every slot is given back exactly once.
 */

import { keyRefusal, queueFull, rateRefusal, shedVictim, waitExceedsTimeout } from "./arrival.js";
import type { ArrivalBudget } from "./budget.js";
import { QueueTimeoutError, type SluiceError } from "./errors.js";
import type { Flow } from "./fair-queue.js";
import { Grants } from "./grants.js";
import { heldForAnother } from "./held.js";
import { type Lane, RETRY_COST, RETRY_EARN, retryBank } from "./lane.js";
import type { Ticket } from "./lease.js";
import type { Outcome } from "./outcome.js";
import type { Path } from "./path.js";
import { effectiveRank, INTERACTIVE, type Rank } from "./priority.js";
import { retryAfterMs } from "./retry-after.js";
import type {
  GrantEvent,
  RefusalEvent,
  ReleaseEvent,
  SchedulerHooks,
  WidthEvent,
} from "./scheduler-events.js";

export type { GrantEvent, RefusalEvent, ReleaseEvent, SchedulerHooks, WidthEvent };

/** At most this many attempts per call (first + re-dispatches). */
export const MAX_ATTEMPTS = 3;

export class Scheduler extends Grants {
  /**
   * Admits a new ticket: grants it at once when its path has room and nobody is ahead of it,
   * else queues it (shedding a lower class if the queue is full). Throws the refusal.
   */
  admit(t: Ticket, nowMs: number): "granted" | "queued" {
    const lane = t.laneRef;
    this.refuseByKey(t, nowMs);
    t.enqueuedAt = nowMs;
    if (this.#grantNow(lane, t, nowMs) || this.#grantAsWaiter(lane, t, nowMs)) return "granted";
    this.#enqueue(lane, t, nowMs);
    this.pass(nowMs, lane);
    return (t.state as string) === "granted" ? "granted" : "queued";
  }

  /** Grants `t` at once when nobody waits in its lane and its whole path has room. */
  #grantNow(lane: Lane<Ticket>, t: Ticket, nowMs: number): boolean {
    if (lane.queue.size > 0) return false;
    const path = this.pathFor(lane, t, nowMs);
    if (path === null) return false;
    // Only a metered path can be held for another lane's waiter (the check is on every grant).
    if (path.metered.length > 0 && heldForAnother(this.waiting, path, t.rank, t.arrivedAt, nowMs, lane))
      return false;
    this.grant(lane, t, path, nowMs);
    return true;
  }

  /**
   * With others waiting, an arrival can still be the one a pass would grant now — an interactive
   * call and a free reserve slot the waiters may not take. Queue it for one pass (no refusal
   * rules apply to a call granted at once) and take it back out if the pass did not grant it.
   */
  #grantAsWaiter(lane: Lane<Ticket>, t: Ticket, nowMs: number): boolean {
    if (lane.queue.size === 0 || !lane.budget.hasRoom(INTERACTIVE)) return false;
    this.push(lane, t, nowMs);
    this.pass(nowMs);
    if ((t.state as string) === "granted") return true;
    this.remove(lane, t, nowMs);
    return false;
  }

  /** Grants `t` only if its whole path has room now; never queues (shadow mode, `wait: false`). */
  admitNow(t: Ticket, nowMs: number): "granted" {
    const lane = t.laneRef;
    this.refuseByKey(t, nowMs);
    if (this.grantIfFree(t, nowMs)) return "granted";
    const rate = rateRefusal(lane, t.tokens, nowMs, false, t.rank);
    if (rate !== null) throw this.refuse(lane, rate);
    throw queueFull(lane, lane.queue.positionForArrival(t.rank), "no_wait", t.rank);
  }

  /** Grants `t` if a pass would grant it now; otherwise changes nothing (no refusal, no event). */
  grantIfFree(t: Ticket, nowMs: number): boolean {
    const lane = t.laneRef;
    if (t.key !== null && keyRefusal(t.key, lane, t.tokens, nowMs) !== null) return false;
    t.enqueuedAt = nowMs;
    return this.#grantNow(lane, t, nowMs) || this.#grantAsWaiter(lane, t, nowMs);
  }

  /**
   * Would a call of class `rank` for `key` be refused on arrival right now? Used before reading a
   * request body (DESIGN §3.1 step 2), so a refused upload is never read. Queues nothing.
   */
  precheck(
    lane: Lane<Ticket>,
    rank: Rank,
    key: ArrivalBudget | null,
    cost: number,
    nowMs: number,
  ): SluiceError | null {
    const byKey = keyRefusal(key, lane, cost, nowMs);
    if (byKey !== null) return this.refuse(lane, byKey);
    const queue = lane.queue;
    const metered = lane.metered.length > 0;
    if (!metered || lane.lanePath.hasRoom(rank, cost, nowMs)) {
      if (queue.size === 0 && lane.budget.hasRoom(rank)) return null;
      // An interactive call takes a free reserve slot ahead of waiters that may not use it.
      if (rank === INTERACTIVE && lane.budget.hasRoom(rank) && queue.head(INTERACTIVE) === null) return null;
    }
    return this.#arrivalRefusal(lane, rank, Number.NEGATIVE_INFINITY, cost, nowMs, key?.flow ?? null);
  }

  /**
   * The refusal an arrival that must wait gets now (a token or request budget that can never
   * cover it or not within the queue timeout, expected wait past the timeout, or a full queue
   * with nobody of a lower class to shed), or null when it may queue.
   */
  #arrivalRefusal(
    lane: Lane<Ticket>,
    rank: Rank,
    arrivedAt: number,
    cost: number,
    nowMs: number,
    flow: Flow | null,
  ): SluiceError | null {
    if (lane.metered.length > 0) {
      const rate = rateRefusal(lane, cost, nowMs, true, rank);
      if (rate !== null) return this.refuse(lane, rate);
    }
    let position = lane.queue.positionForArrival(rank);
    // Say no at once: waiting would only end in a timeout (DESIGN §1.1) — in its flow's turn.
    if (waitExceedsTimeout(lane, position)) position = lane.queue.positionForArrival(rank, flow);
    if (waitExceedsTimeout(lane, position))
      return this.refuse(lane, queueFull(lane, position, "expected_wait", rank));
    if (lane.queue.size >= lane.settings.queueLimit && shedVictim(lane, rank, arrivedAt) === null)
      return this.refuse(lane, queueFull(lane, position, "full", rank));
    return null;
  }

  #enqueue(lane: Lane<Ticket>, t: Ticket, nowMs: number): void {
    const refusal = this.#arrivalRefusal(lane, t.rank, t.arrivedAt, t.tokens, nowMs, t.flow);
    if (refusal !== null) throw refusal;
    if (lane.queue.size >= lane.settings.queueLimit)
      this.shed(lane, shedVictim(lane, t.rank, t.arrivedAt)!, nowMs);
    this.push(lane, t, nowMs);
  }

  /**
   * One scheduler pass: grant the best waiter whose whole path has room, until none can be.
   * Across lanes the best waiter (effective class, then arrival) goes first, which is what a
   * shared GPU group needs; a lane blocked by its own full budget never blocks another lane.
   * `from`: a lane the caller knows has waiters; when it is the only one, only it is looked at.
   */
  pass(nowMs: number, from?: Lane<Ticket>): void {
    if (from !== undefined && this.waiting.size === 1 && from.queue.size > 0) {
      this.#passLane(from, nowMs);
      return;
    }
    while (this.waiting.size > 0) {
      let best: Ticket | null = null;
      let bestLane: Lane<Ticket> | null = null;
      let bestPath: Path | null = null;
      let bestRank = 3;
      let bestArrived = 0;
      for (const lane of this.waiting) {
        const c = this.#choose(lane, nowMs);
        if (c === null) continue;
        const path = this.#chosen!;
        // A lane competes with its waiter's class's oldest (the waiter itself unless flows share it).
        const o = lane.queue.head(c.rank) ?? c;
        const rank = effectiveRank(o.rank, o.arrivedAt, nowMs, lane.settings.agingMs);
        if (best !== null && (rank > bestRank || (rank === bestRank && o.arrivedAt >= bestArrived))) continue;
        if (heldForAnother(this.waiting, path, rank, o.arrivedAt, nowMs, lane)) continue;
        best = c;
        bestLane = lane;
        bestPath = path;
        bestRank = rank;
        bestArrived = o.arrivedAt;
      }
      if (best === null || bestLane === null || bestPath === null) return;
      this.#serve(bestLane, best, bestPath, nowMs);
    }
  }

  /**
   * `pass` when `lane` is the only lane with waiters (the usual case, and every release of a busy
   * lane): no other lane's waiter to compare with or hold a bucket for, so its own best goes.
   */
  #passLane(lane: Lane<Ticket>, nowMs: number): void {
    for (let c = this.#choose(lane, nowMs); c !== null; c = this.#choose(lane, nowMs))
      this.#serve(lane, c, this.#chosen!, nowMs);
  }

  /** The path `#choose` found for the waiter it returned (a field: no pair allocated per pass). */
  #chosen: Path | null = null;

  /**
   * The waiter `lane` would serve now, with its path in `#chosen`, or null when none fits: its
   * candidate, else — a bucket's interactive reserve is closed to an aged call — the first
   * interactive waiter.
   */
  #choose(lane: Lane<Ticket>, nowMs: number): Ticket | null {
    let c = lane.candidate(nowMs);
    while (c !== null && this.leavesForKey(lane, c, nowMs)) c = lane.candidate(nowMs);
    if (c === null) return null;
    let path = this.pathFor(lane, c, nowMs);
    if (path === null) {
      const held = c;
      c = lane.reserveCandidate(held);
      path = c === null ? null : this.pathFor(lane, c, nowMs);
      // Held by its class's share of a bucket: another class's next waiter may go.
      for (const other of path === null ? lane.sharedOut(held, held.tokens, nowMs) : []) {
        path = this.pathFor(lane, other, nowMs);
        c = other;
        if (path !== null) break;
      }
      if (c === null || path === null) return null;
    }
    this.#chosen = path;
    return c;
  }

  /** Takes `t` out of line and grants it `path`. */
  #serve(lane: Lane<Ticket>, t: Ticket, path: Path, nowMs: number): void {
    this.#chosen = null;
    lane.queue.charge(t); // its flow's turn is used (fair-queue.ts); a cancel or timeout pays none
    this.remove(lane, t, nowMs);
    this.grant(lane, t, path, nowMs);
    this.hooks.granted(t);
  }

  /** Ends a granted ticket: the pod hears the outcome, every slot is given back, waiters run. */
  end(t: Ticket, outcome: Outcome | null, nowMs: number): void {
    if (t.state !== "granted") return;
    t.state = "ended";
    const lane = t.laneRef;
    // Guarded here, not only inside: most calls have neither, and ending them is the hot path.
    if (t.dispatch !== null) this.settlePod(lane, t, outcome, nowMs);
    if (lane.account !== null) this.settleAccount(lane, t, outcome, nowMs);
    // Re-dispatch budget, gRPC retry-throttling style: successes earn it, so a fleet where every
    // pod refuses earns nothing and re-dispatch stops once the small bank is spent.
    if (outcome?.kind === "success" && lane.pods !== null)
      lane.retryTokens = Math.min(lane.retryTokens + RETRY_EARN, retryBank(lane.limit));
    this.giveBack(t, nowMs);
    if (lane.redispatching > 0 && t.attempts > 1) lane.redispatching--;
    const held = nowMs - t.grantedAt;
    lane.hold.record(held);
    if (this.onRelease.size > 0)
      this.onRelease.emit({ lane: lane.name, pod: t.pod, heldMs: held, outcome: outcome?.kind ?? "none" });
    if (this.waiting.size > 0) this.pass(nowMs, lane);
  }

  /**
   * Re-dispatch (DESIGN §1.3): the pod refused before starting the call. The ticket gives back
   * that pod's part of its path, keeps its lane slot and arrival time, and takes another pod now
   * if one has room; otherwise it waits again at its original place in line. Returns "denied"
   * (and ends the ticket) past 3 attempts or when the lane's re-dispatch budget is spent.
   */
  redispatch(t: Ticket, outcome: Outcome, nowMs: number): "dispatched" | "queued" | "denied" {
    const lane = t.laneRef;
    if (t.state !== "granted") return "denied";
    const allowed =
      lane.pods !== null &&
      t.attempts < MAX_ATTEMPTS &&
      lane.retryTokens >= RETRY_COST &&
      lane.redispatching < Math.max(3, Math.floor(0.2 * lane.inflight));
    if (!allowed) {
      this.end(t, outcome, nowMs); // nowhere else to send it (or no budget): the refusal ends the call
      return "denied";
    }
    if (lane.account !== null && t.acct !== null) {
      // The account hears every attempt. A quota signal paused it: every pod of the account would
      // answer the same, so the refusal ends the call (the client gets the provider's reset).
      this.settleAccount(lane, t, outcome, nowMs);
      if (lane.account.quotaUntil > nowMs) {
        t.acct = null;
        this.end(t, outcome, nowMs);
        return "denied";
      }
      lane.account.record(t.acct);
    }
    lane.retryTokens -= RETRY_COST;
    const d = t.dispatch!;
    const refused = d.pod!;
    if (d.attempts === 1) lane.redispatching++;
    d.attempts++;
    this.settlePod(lane, t, outcome, nowMs);
    d.pod = null; // settled: an end() from here on must not settle it again
    this.leavePod(t, nowMs);
    if (d.refusedBy === null) d.refusedBy = [refused];
    else d.refusedBy.push(refused);
    const path = lane.choosePath(t.rank, nowMs, t.tokens, d.refusedBy, true, t.key?.meter ?? null);
    if (path !== null && !d.refusedBy.includes(path.pod!)) {
      this.store.commit(path, t.tokens, nowMs, path.podStart, t.rank); // choosePath just found room
      this.attach(t, path, nowMs);
      if (this.waiting.size > 0) this.pass(nowMs);
      return "dispatched";
    }
    // No other pod now: wait again, keeping the arrival time, within the queue bound. An earlier
    // arrival keeps its place over a newer waiter of its class or any of a lower class.
    if (lane.allTripped(nowMs)) {
      // Every pod is isolated: waiting would only run into the queue timeout.
      this.end(t, outcome, nowMs);
      return "denied";
    }
    if (lane.queue.size >= lane.settings.queueLimit) {
      const victim = shedVictim(lane, t.rank, t.arrivedAt, true);
      if (victim === null) {
        this.end(t, outcome, nowMs);
        return "denied";
      }
      this.shed(lane, victim, nowMs);
    }
    // The refusing pod never ran it: its reservations are refunded, and taken again at the re-grant.
    t.used = null;
    this.giveBack(t, nowMs);
    t.used = undefined;
    t.enqueuedAt = nowMs;
    this.push(lane, t, nowMs);
    this.pass(nowMs);
    return (t.state as string) === "granted" ? "dispatched" : "queued";
  }

  /**
   * Removes a waiting ticket (abort). No budget was held; only on a metered lane can its leaving
   * let another waiter through (one with a smaller estimate behind it, or another lane's waiter
   * the bucket was kept for), so only there does a pass run.
   */
  cancel(t: Ticket, nowMs: number): boolean {
    if (t.state !== "waiting") return false;
    const lane = t.laneRef;
    this.remove(lane, t, nowMs);
    t.state = "ended";
    if (t.attempts > 1 && lane.redispatching > 0) lane.redispatching--;
    if (lane.metered.length > 0 && this.waiting.size > 0) this.pass(nowMs);
    return true;
  }

  /** Expires waiters past their queue timeout, then runs a pass (breakers may have cooled). */
  tick(nowMs: number): void {
    for (const lane of this.waiting) {
      const timeout = lane.settings.queueTimeoutMs;
      for (let head = lane.queue.earliestEnqueued; head !== null; head = lane.queue.earliestEnqueued) {
        if (head.enqueuedAt + timeout > nowMs) break;
        const position = lane.queue.positionOf(head);
        this.remove(lane, head, nowMs);
        lane.timeouts.count(nowMs);
        const error = new QueueTimeoutError(
          lane.name,
          nowMs - head.enqueuedAt,
          position,
          retryAfterMs(lane.queue.size + 1, lane.width, lane.hold),
        );
        if (this.onRefusal.size > 0) this.onRefusal.emit({ lane: lane.name, error });
        this.reject(head, error);
      }
    }
    this.pass(nowMs);
  }

  /** The next time something changes by itself: a queue deadline, or a budget gaining room (cooldown, pause, refill). */
  nextWakeAt(nowMs: number): number | undefined {
    let at: number | undefined;
    for (const lane of this.waiting) {
      const head = lane.queue.earliestEnqueued;
      if (head !== null) {
        const deadline = head.enqueuedAt + lane.settings.queueTimeoutMs;
        if (at === undefined || deadline < at) at = deadline;
      }
      // Nothing waits on a refill, a cooldown or aging there. (Asked on arrivals and releases.)
      if (lane.changesOnlyAtDeadlines) continue;
      // A bucket's refill depends on the estimate and class of the waiter it is for: the lane's
      // next one, or the first interactive one, which may use the reserve the next one may not.
      const c = lane.candidate(nowMs);
      const change = lane.nextChangeAt(nowMs, c?.tokens ?? 0, c?.rank ?? INTERACTIVE, c?.key?.meter);
      if (change !== undefined && (at === undefined || change < at)) at = change;
      const i = c === null ? null : lane.reserveCandidate(c);
      const reserved = i === null ? undefined : lane.nextChangeAt(nowMs, i.tokens, INTERACTIVE);
      if (reserved !== undefined && (at === undefined || reserved < at)) at = reserved;
      if (lane.metered.length > 0) {
        const aging = lane.nextAgingAt(nowMs);
        if (aging !== undefined && (at === undefined || aging < at)) at = aging;
      }
    }
    return at;
  }
}
