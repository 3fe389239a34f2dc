/**
 * The atomic grant across a path (DESIGN §1, STYLE G11): a waiter is granted only when every
 * budget on its path — lane (with its reserve), shared groups, a pod with width to spare — has
 * room, and then takes them all at once. Pure and synchronous: the caller passes `nowMs`, and
 * the shell owns promises and the one timer (`nextWakeAt`).
 *
 * Invariants (property-tested in test/property): no budget above its limit; no lost wake-up (after
 * every operation no waiter that could be granted is left waiting); a cancelled or timed-out
 * waiter leaves no residue; every slot is given back exactly once.
 */
import type { KeyBudget } from "./budget.js";
import { KeyLimitError, QueueFullError, QueueTimeoutError, type SluiceError } from "./errors.js";
import { Emitter } from "./events.js";
import { type Lane, RETRY_COST, RETRY_EARN, retryBank } from "./lane.js";
import { PodAttempt, type Ticket } from "./lease.js";
import type { Outcome } from "./outcome.js";
import type { Pod } from "./pod.js";
import { effectiveRank, type Rank } from "./priority.js";
import { expectedWaitMs, retryAfterMs } from "./retry-after.js";

/** How the shell hears about grants and refusals of queued tickets. */
export interface SchedulerHooks {
  granted(ticket: Ticket): void;
  rejected(ticket: Ticket, error: SluiceError): void;
}

/** Payload of `onGrant`. */
export interface GrantEvent {
  lane: string;
  pod: string | undefined;
  priority: Rank;
  waitedMs: number;
}
/** Payload of `onRelease`. */
export interface ReleaseEvent {
  lane: string;
  pod: string | undefined;
  heldMs: number;
  outcome: Outcome["kind"] | "none";
}
/** Payload of `onRefusal`: sluice said no (nothing was sent upstream). */
export interface RefusalEvent {
  lane: string;
  error: SluiceError;
}
/** Payload of `onWidthChange`. */
export interface WidthEvent {
  lane: string;
  pod: string;
  width: number;
  ceiling: number;
}

/** At most this many attempts per call (first + re-dispatches). */
export const MAX_ATTEMPTS = 3;

export class Scheduler {
  /** Lanes with at least one waiter: the only ones a pass needs to look at. */
  readonly #waiting = new Set<Lane<Ticket>>();
  readonly onGrant = new Emitter<GrantEvent>();
  readonly onRelease = new Emitter<ReleaseEvent>();
  readonly onRefusal = new Emitter<RefusalEvent>();
  readonly onWidthChange = new Emitter<WidthEvent>();

  constructor(readonly hooks: SchedulerHooks) {}

  /** Lanes with waiters (read-only view for snapshots and tests). */
  get waitingLanes(): ReadonlySet<Lane<Ticket>> {
    return this.#waiting;
  }

  /**
   * Admits a new ticket: grants it at once when its path has room and nobody is ahead of it,
   * else queues it (shedding a lower class if the queue is full). Throws the refusal.
   */
  admit(t: Ticket, nowMs: number): "granted" | "queued" {
    const lane = t.laneRef;
    const key = t.key;
    if (key?.full) throw this.#refuse(lane, keyLimit(key, lane));
    t.enqueuedAt = nowMs;
    if (this.#grantNow(lane, t, nowMs) || this.#grantAsWaiter(lane, t, nowMs)) return "granted";
    this.#enqueue(lane, t, nowMs);
    this.pass(nowMs);
    return (t.state as string) === "granted" ? "granted" : "queued";
  }

  /** Grants `t` at once when nobody waits in its lane and its whole path has room. */
  #grantNow(lane: Lane<Ticket>, t: Ticket, nowMs: number): boolean {
    if (lane.queue.size > 0 || lane.inflight >= lane.limit - (t.rank === 0 ? 0 : lane.settings.reserve))
      return false;
    const pod = lane.pods === null ? null : lane.choosePod(nowMs);
    if ((lane.pods !== null && pod === null) || !lane.groupsHaveRoom()) return false;
    this.#grant(lane, t, pod, nowMs);
    return true;
  }

  /**
   * With others waiting, an arrival can still be the one a pass would grant now — an interactive
   * call and a free reserve slot the waiters may not take. Queue it for one pass (no refusal
   * rules apply to a call granted at once) and take it back out if the pass did not grant it.
   */
  #grantAsWaiter(lane: Lane<Ticket>, t: Ticket, nowMs: number): boolean {
    if (lane.queue.size === 0 || lane.inflight >= lane.limit) return false;
    this.#push(lane, t, nowMs);
    this.pass(nowMs);
    if ((t.state as string) === "granted") return true;
    this.#remove(lane, t, nowMs);
    return false;
  }

  /** Grants `t` only if its whole path has room now; never queues (shadow mode, `wait: false`). */
  admitNow(t: Ticket, nowMs: number): "granted" {
    const lane = t.laneRef;
    if (t.key?.full) throw this.#refuse(lane, keyLimit(t.key, lane));
    if (this.grantIfFree(t, nowMs)) return "granted";
    throw this.#queueFull(lane, lane.queue.positionForArrival(t.rank), "no_wait");
  }

  /** Grants `t` if a pass would grant it now; otherwise changes nothing (no refusal, no event). */
  grantIfFree(t: Ticket, nowMs: number): boolean {
    const lane = t.laneRef;
    if (t.key?.full) return false;
    t.enqueuedAt = nowMs;
    return this.#grantNow(lane, t, nowMs) || this.#grantAsWaiter(lane, t, nowMs);
  }

  /**
   * Would a call of class `rank` for `key` be refused on arrival right now? Used before reading a
   * request body (DESIGN §3.1 step 2), so a refused upload is never read. Queues nothing.
   */
  precheck(lane: Lane<Ticket>, rank: Rank, key: KeyBudget | null): SluiceError | null {
    if (key?.full) return this.#refuse(lane, keyLimit(key, lane));
    const queue = lane.queue;
    if (queue.size === 0 && lane.inflight < lane.limit - (rank === 0 ? 0 : lane.settings.reserve))
      return null;
    // An interactive call takes a free reserve slot ahead of waiters that may not use it.
    if (rank === 0 && lane.inflight < lane.limit && queue.head(0) === null) return null;
    const position = queue.positionForArrival(rank);
    if (lane.hold.samples >= 5) {
      const expected = expectedWaitMs(position, lane.width, lane.hold);
      if (expected !== undefined && expected > lane.settings.queueTimeoutMs)
        return this.#refuse(lane, this.#queueFull(lane, position, "expected_wait"));
    }
    if (queue.size >= lane.settings.queueLimit && queue.newestBelow(rank) === null)
      return this.#refuse(lane, this.#queueFull(lane, position, "full"));
    return null;
  }

  #enqueue(lane: Lane<Ticket>, t: Ticket, nowMs: number): void {
    const { queueLimit, queueTimeoutMs } = lane.settings;
    const queue = lane.queue;
    // Say no at once: if the expected wait already exceeds the queue timeout, waiting would
    // only end in a timeout (DESIGN §1.1). Needs a measurement of at least a few releases.
    const position = queue.positionForArrival(t.rank);
    if (lane.hold.samples >= 5) {
      const expected = expectedWaitMs(position, lane.width, lane.hold);
      if (expected !== undefined && expected > queueTimeoutMs) {
        throw this.#refuse(lane, this.#queueFull(lane, position, "expected_wait"));
      }
    }
    if (queue.size >= queueLimit) {
      const victim = queue.newestBelow(t.rank);
      if (victim === null) throw this.#refuse(lane, this.#queueFull(lane, position, "full"));
      this.#remove(lane, victim, nowMs);
      this.#reject(
        victim,
        this.#refuse(lane, this.#queueFull(lane, queue.positionForArrival(victim.rank), "shed")),
      );
    }
    this.#push(lane, t, nowMs);
  }

  /** Puts `t` in its lane's queue (the caller has applied the queue's refusal rules). */
  #push(lane: Lane<Ticket>, t: Ticket, nowMs: number): void {
    if (t.key !== null) t.key.queued++;
    t.state = "waiting";
    lane.queue.push(t);
    if (lane.queue.size === 1) this.#waiting.add(lane);
    lane.noteQueue(nowMs);
  }

  /**
   * One scheduler pass: grant the best waiter whose whole path has room, until none can be.
   * Across lanes the best waiter (effective class, then arrival) goes first, which is what a
   * shared GPU group needs; a lane blocked by its own full budget never blocks another lane.
   */
  pass(nowMs: number): void {
    while (this.#waiting.size > 0) {
      let best: Ticket | null = null;
      let bestLane: Lane<Ticket> | null = null;
      let bestPod: Pod | null = null;
      let bestRank = 3;
      for (const lane of this.#waiting) {
        const c = lane.candidate(nowMs);
        if (c === null || !lane.groupsHaveRoom()) continue;
        let pod: Pod | null = null;
        if (lane.pods !== null) {
          pod = lane.choosePod(nowMs, c.dispatch?.refusedBy ?? null);
          if (pod === null) continue;
        }
        const rank = effectiveRank(c.rank, c.arrivedAt, nowMs, lane.settings.agingMs);
        if (best === null || rank < bestRank || (rank === bestRank && c.arrivedAt < best.arrivedAt)) {
          best = c;
          bestLane = lane;
          bestPod = pod;
          bestRank = rank;
        }
      }
      if (best === null || bestLane === null) return;
      this.#remove(bestLane, best, nowMs);
      this.#grant(bestLane, best, bestPod, nowMs);
      this.hooks.granted(best);
    }
  }

  #grant(lane: Lane<Ticket>, t: Ticket, pod: Pod | null, nowMs: number): void {
    t.state = "granted";
    t.grantedAt = nowMs;
    lane.inflight++;
    for (const g of lane.groups) g.take();
    if (t.key !== null) t.key.inflight++; // its queued count, if any, went with #remove
    if (pod !== null) {
      pod.inflight++;
      pod.group?.take();
      this.#attach(t, pod, nowMs);
    }
    lane.waits.record(nowMs - t.enqueuedAt, nowMs);
    if (this.onGrant.size > 0)
      this.onGrant.emit({ lane: lane.name, pod: pod?.id, priority: t.rank, waitedMs: nowMs - t.enqueuedAt });
  }

  /** Records the dispatch of `t` to `pod` (the pod's counts were already taken). */
  #attach(t: Ticket, pod: Pod, nowMs: number): void {
    let d = t.dispatch;
    if (d === null) {
      d = new PodAttempt(pod);
      t.dispatch = d;
    }
    d.pod = pod;
    d.inflightAtStart = pod.inflight;
    d.widthAtStart = pod.width.width;
    d.epoch = pod.width.epoch;
    d.probe = pod.breaker.onDispatch(nowMs);
  }

  /** Ends a granted ticket: the pod hears the outcome, every slot is given back, waiters run. */
  end(t: Ticket, outcome: Outcome | null, nowMs: number): void {
    if (t.state !== "granted") return;
    t.state = "ended";
    const lane = t.laneRef;
    this.#endPodAttempt(lane, t, outcome, nowMs);
    // Re-dispatch budget, gRPC retry-throttling style: successes earn it, so a fleet where every
    // pod refuses earns nothing and re-dispatch stops once the small bank is spent.
    if (outcome?.kind === "success" && lane.pods !== null)
      lane.retryTokens = Math.min(lane.retryTokens + RETRY_EARN, retryBank(lane.limit));
    this.#giveSlots(lane, t);
    if (t.attempts > 1 && lane.redispatching > 0) lane.redispatching--;
    const held = nowMs - t.grantedAt;
    lane.hold.record(held);
    if (this.onRelease.size > 0)
      this.onRelease.emit({ lane: lane.name, pod: t.pod, heldMs: held, outcome: outcome?.kind ?? "none" });
    if (this.#waiting.size > 0) this.pass(nowMs);
  }

  /** Gives back the lane's slot, its groups' and its key's (never below zero). */
  #giveSlots(lane: Lane<Ticket>, t: Ticket): void {
    if (lane.inflight > 0) lane.inflight--;
    for (const g of lane.groups) g.give();
    if (t.key !== null && t.key.inflight > 0) t.key.inflight--;
  }

  #endPodAttempt(lane: Lane<Ticket>, t: Ticket, outcome: Outcome | null, nowMs: number): void {
    const d = t.dispatch;
    const pod = d?.pod ?? null;
    if (d === null || pod === null) return;
    const verdict = pod.settle(outcome ?? { kind: "ignore" }, d, nowMs, lane.mayOpenAnother());
    d.probe = false;
    if (pod.inflight > 0) pod.inflight--;
    pod.group?.give();
    if (verdict.widthChanged && this.onWidthChange.size > 0)
      this.onWidthChange.emit({ lane: lane.name, pod: pod.id, width: pod.width.width, ceiling: pod.ceiling });
  }

  /**
   * Re-dispatch (DESIGN §1.3): the pod refused before starting the call. The ticket gives back
   * that pod, keeps its lane slot and arrival time, and takes another pod now if one has room;
   * otherwise it waits again at its original place in line. Returns "denied" (and ends the
   * ticket) past 3 attempts or when the lane's re-dispatch budget is spent.
   */
  redispatch(t: Ticket, outcome: Outcome, nowMs: number): "dispatched" | "queued" | "denied" {
    const lane = t.laneRef;
    if (t.state !== "granted") return "denied";
    if (lane.pods === null) {
      this.end(t, outcome, nowMs); // nowhere else to send it: the refusal ends the call
      return "denied";
    }
    const allowed =
      t.attempts < MAX_ATTEMPTS &&
      lane.retryTokens >= RETRY_COST &&
      lane.redispatching < Math.max(3, Math.floor(0.2 * lane.inflight));
    if (!allowed) {
      this.end(t, outcome, nowMs);
      return "denied";
    }
    lane.retryTokens -= RETRY_COST;
    const d = t.dispatch!;
    if (d.attempts === 1) lane.redispatching++;
    d.attempts++;
    this.#endPodAttempt(lane, t, outcome, nowMs);
    const refused = d.pod!;
    if (d.refusedBy === null) d.refusedBy = [refused];
    else d.refusedBy.push(refused);
    d.pod = null; // its ending is settled: an end() from here on must not settle it again
    const pod = lane.choosePod(nowMs, d.refusedBy);
    if (pod !== null && !d.refusedBy.includes(pod)) {
      pod.inflight++;
      pod.group?.take();
      this.#attach(t, pod, nowMs);
      if (this.#waiting.size > 0) this.pass(nowMs);
      return "dispatched";
    }
    // No other pod now: wait again, keeping the arrival time, within the queue bound. An earlier
    // arrival keeps its place over a newer waiter of its class or any of a lower class.
    const queue = lane.queue;
    if (lane.allTripped(nowMs)) {
      // Every pod is isolated: waiting would only run into the queue timeout.
      this.end(t, outcome, nowMs);
      return "denied";
    }
    if (queue.size >= lane.settings.queueLimit) {
      const newer = queue.tail(t.rank);
      // Same arrival time: the re-dispatched call was admitted first.
      const victim =
        queue.newestBelow(t.rank) ?? (newer !== null && newer.arrivedAt >= t.arrivedAt ? newer : null);
      if (victim === null) {
        this.end(t, outcome, nowMs);
        return "denied";
      }
      this.#remove(lane, victim, nowMs);
      this.#reject(
        victim,
        this.#refuse(lane, this.#queueFull(lane, queue.positionForArrival(victim.rank), "shed")),
      );
    }
    this.#giveSlots(lane, t);
    t.enqueuedAt = nowMs;
    this.#push(lane, t, nowMs);
    this.pass(nowMs);
    return (t.state as string) === "granted" ? "dispatched" : "queued";
  }

  /** Removes a waiting ticket (abort). No budget was held, so no pass is needed. */
  cancel(t: Ticket, nowMs: number): boolean {
    if (t.state !== "waiting") return false;
    const lane = t.laneRef;
    this.#remove(lane, t, nowMs);
    t.state = "ended";
    if (t.attempts > 1 && lane.redispatching > 0) lane.redispatching--;
    return true;
  }

  #remove(lane: Lane<Ticket>, t: Ticket, nowMs: number): void {
    lane.queue.remove(t);
    if (lane.queue.size === 0) this.#waiting.delete(lane);
    if (t.key !== null && t.key.queued > 0) t.key.queued--;
    lane.noteQueue(nowMs);
  }

  #reject(t: Ticket, error: SluiceError): void {
    t.state = "ended";
    if (t.attempts > 1 && t.laneRef.redispatching > 0) t.laneRef.redispatching--;
    this.hooks.rejected(t, error);
  }

  /** Expires waiters past their queue timeout, then runs a pass (breakers may have cooled). */
  tick(nowMs: number): void {
    for (const lane of this.#waiting) {
      const timeout = lane.settings.queueTimeoutMs;
      for (let head = lane.queue.earliestEnqueued; head !== null; head = lane.queue.earliestEnqueued) {
        if (head.enqueuedAt + timeout > nowMs) break;
        const position = lane.queue.positionOf(head);
        this.#remove(lane, head, nowMs);
        lane.timeouts.count(nowMs);
        const error = new QueueTimeoutError(
          lane.name,
          nowMs - head.enqueuedAt,
          position,
          retryAfterMs(lane.queue.size + 1, lane.width, lane.hold),
        );
        if (this.onRefusal.size > 0) this.onRefusal.emit({ lane: lane.name, error });
        this.#reject(head, error);
      }
    }
    this.pass(nowMs);
  }

  /** The next time something changes by itself: a queue deadline, a breaker cooldown, a pause. */
  nextWakeAt(nowMs: number): number | undefined {
    let at: number | undefined;
    for (const lane of this.#waiting) {
      const head = lane.queue.earliestEnqueued;
      if (head !== null) {
        const deadline = head.enqueuedAt + lane.settings.queueTimeoutMs;
        if (at === undefined || deadline < at) at = deadline;
      }
      if (lane.pods === null) continue;
      for (const pod of lane.pods) {
        const change = pod.nextChangeAt(nowMs);
        if (change !== undefined && (at === undefined || change < at)) at = change;
      }
    }
    return at;
  }

  #queueFull(lane: Lane<Ticket>, position: number, reason: QueueFullError["reason"]): QueueFullError {
    const width = lane.width;
    return new QueueFullError(
      lane.name,
      lane.inflight,
      lane.queue.size,
      lane.settings.queueLimit,
      width,
      retryAfterMs(position, width, lane.hold),
      reason,
    );
  }

  #refuse(lane: Lane<Ticket>, error: SluiceError): SluiceError {
    if (this.onRefusal.size > 0) this.onRefusal.emit({ lane: lane.name, error });
    return error;
  }
}

function keyLimit(key: KeyBudget, lane: Lane<Ticket>): KeyLimitError {
  return new KeyLimitError(
    key.name,
    key.inflight,
    key.queued,
    key.maxInflight,
    retryAfterMs(key.queued + 1, lane.width, lane.hold),
  );
}
