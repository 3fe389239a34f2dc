/**
 * The bookkeeping half of the scheduler: the set of lanes with waiters, putting a waiter in line
 * and taking it out, and the one place a grant takes its path (`grant`) and the one place it is
 * given back (`giveBack`), with what a pod and an account hear about each call. `Scheduler`
 * (scheduler.ts) decides who is granted; this class only records it.
 */

import { keyRefusal, queueFull } from "./arrival.js";
import type { SluiceError } from "./errors.js";
import { Emitter } from "./events.js";
import type { Lane } from "./lane.js";
import { PodAttempt, type Ticket } from "./lease.js";
import type { Outcome } from "./outcome.js";
import { IGNORE } from "./outcome.js";
import type { Path } from "./path.js";
import type {
  GrantEvent,
  RefusalEvent,
  ReleaseEvent,
  SchedulerHooks,
  WidthEvent,
} from "./scheduler-events.js";
import { isFleetStore, type Store } from "./store.js";

export class Grants {
  /** Lanes with at least one waiter: the only ones a pass needs to look at. */
  protected readonly waiting = new Set<Lane<Ticket>>();

  readonly onGrant = new Emitter<GrantEvent>();
  readonly onRelease = new Emitter<ReleaseEvent>();
  readonly onRefusal = new Emitter<RefusalEvent>();
  readonly onWidthChange = new Emitter<WidthEvent>();

  constructor(
    readonly hooks: SchedulerHooks,
    readonly store: Store,
    /**
     * The store's `commit` and `give` are plain in-place counts (`Store.countsInPlace`), so a
     * path of one concurrency budget (`Path.solo`) is taken and given by that budget directly,
     * the same `take()`/`give()` without the store's loop over the path. False for any other
     * store (a fleet store mirrors and confirms every take).
     */
    readonly inPlace = store.countsInPlace,
  ) {}

  /** Lanes with waiters (read-only view for snapshots and tests). */
  get waitingLanes(): ReadonlySet<Lane<Ticket>> {
    return this.waiting;
  }

  /** Puts `t` in its lane's queue (the caller has applied the queue's refusal rules). */
  protected push(lane: Lane<Ticket>, t: Ticket, nowMs: number): void {
    if (t.key !== null) {
      t.key.queued++;
      if (t.key.meter !== undefined) {
        t.key.meter.queue(t.tokens, 1);
        lane.keyMetered++;
      }
    }
    t.state = "waiting";
    lane.queue.push(t);
    lane.queuedTokens[t.rank] += t.tokens;
    if (lane.queue.size === 1) this.waiting.add(lane);
    lane.noteQueue(nowMs);
  }

  protected remove(lane: Lane<Ticket>, t: Ticket, nowMs: number): void {
    lane.queue.remove(t);
    lane.queuedTokens[t.rank] -= t.tokens;
    if (lane.queue.size === 0) this.waiting.delete(lane);
    if (t.key !== null && t.key.queued > 0) t.key.queued--;
    if (t.key !== null && t.key.meter !== undefined) {
      t.key.meter.queue(t.tokens, -1);
      if (lane.keyMetered > 0) lane.keyMetered--; // a reload may have given the key its meter meanwhile
    }
    lane.noteQueue(nowMs);
  }

  protected reject(t: Ticket, error: SluiceError): void {
    t.state = "ended";
    if (t.attempts > 1 && t.laneRef.redispatching > 0) t.laneRef.redispatching--;
    this.hooks.rejected(t, error);
  }

  protected refuse<E extends SluiceError>(lane: Lane<Ticket>, error: E): E {
    if (this.onRefusal.size > 0) this.onRefusal.emit({ lane: lane.name, error });
    return error;
  }

  /** Takes `victim` out of a full queue; it gets the queue-full refusal (reason `shed`). */
  protected shed(lane: Lane<Ticket>, victim: Ticket, nowMs: number): void {
    this.remove(lane, victim, nowMs);
    const position = lane.queue.positionForArrival(victim.rank);
    this.reject(victim, this.refuse(lane, queueFull(lane, position, "shed", victim.rank)));
  }

  /**
   * The one place a grant takes its budgets: the whole path at once, then the key's slot. The
   * caller has just chosen `path` because it had room (`Lane.choosePath`).
   */
  protected grant(lane: Lane<Ticket>, t: Ticket, path: Path, nowMs: number): void {
    const solo = this.inPlace ? path.solo : null;
    if (solo !== null) solo.take();
    else this.store.commit(path, t.tokens, nowMs, 0, t.rank);
    t.state = "granted";
    t.grantedAt = nowMs;
    t.path = path;
    if (lane.account !== null)
      t.acct = lane.account.record(t.acct ?? { inflightAtStart: 0, widthAtStart: 0, epoch: 0, probe: false });
    if (t.key !== null) t.key.granted(t.laneRef.slot); // its queued count, if any, went with #remove
    if (path.pod !== null) this.attach(t, path, nowMs);
    lane.waits.record(nowMs - t.enqueuedAt, nowMs);
    if (this.onGrant.size > 0)
      this.onGrant.emit({
        lane: lane.name,
        pod: path.pod?.id,
        priority: t.rank,
        waitedMs: nowMs - t.enqueuedAt,
      });
  }

  /** Records the dispatch of `t` on `path`'s pod (the path's budgets were already taken). */
  protected attach(t: Ticket, path: Path, nowMs: number): void {
    const pod = path.pod!;
    let d = t.dispatch;
    if (d === null) {
      d = new PodAttempt(pod);
      t.dispatch = d;
    }
    t.path = path;
    d.pod = pod;
    d.inflightAtStart = pod.inflight;
    d.widthAtStart = pod.width.width;
    d.epoch = pod.width.epoch;
    d.probe = pod.breaker.onDispatch(nowMs);
  }

  /**
   * The one place budgets are given back: whatever path the ticket holds, and its key's slot. Its
   * metered budgets settle the reservation first, with what the call used (`t.used`: its real
   * tokens, null when it never reached the provider, undefined to keep the estimate).
   */
  protected giveBack(t: Ticket, nowMs: number): void {
    const path = t.path;
    if (path !== null) {
      t.path = null;
      const solo = this.inPlace ? path.solo : null; // nothing metered on a solo path
      if (solo !== null) solo.give();
      else {
        if (path.metered.length > 0) this.store.reconcile(path, t.tokens, t.used, nowMs, t.grantedAt);
        this.store.give(path, t.tokens, nowMs);
      }
    }
    if (t.key !== null) t.key.ended(t.laneRef.slot);
  }

  /**
   * The pod hears how its attempt ended (width, breaker). Only the outcome is settled here: the
   * pod's slot is given back with the path (`#giveBack`), or by a re-dispatch that moves off the pod.
   */
  protected settlePod(lane: Lane<Ticket>, t: Ticket, outcome: Outcome | null, nowMs: number): void {
    const d = t.dispatch;
    const pod = d?.pod ?? null;
    if (d === null || pod === null) return;
    // A quota signal pauses the budget it belongs to: the account when the lane has one, else the pod.
    const own = outcome === null || (outcome.kind === "quota" && lane.account !== null) ? IGNORE : outcome;
    const verdict = pod.settle(own, d, nowMs, lane.mayOpenAnother());
    d.probe = false;
    if (verdict.widthChanged && this.onWidthChange.size > 0)
      this.onWidthChange.emit({ lane: lane.name, pod: pod.id, width: pod.width.width, ceiling: pod.ceiling });
  }

  /** The lane's account hears how an upstream attempt ended: its cap and its quota pause. */
  protected settleAccount(lane: Lane<Ticket>, t: Ticket, outcome: Outcome | null, nowMs: number): void {
    const account = lane.account;
    if (account === null || t.acct === null || outcome === null) return;
    if (account.settle(outcome, t.acct, nowMs) && this.onWidthChange.size > 0)
      this.onWidthChange.emit({
        lane: lane.name,
        pod: `account:${account.name}`,
        width: account.width.width,
        ceiling: account.settings.maxInflight ?? account.width.width,
      });
  }

  /** Throws the refusal `t`'s key gives on arrival: its in flight + queued bound, then its buckets. */
  protected refuseByKey(t: Ticket, nowMs: number): void {
    const refusal = keyRefusal(t.key, t.laneRef, t.tokens, nowMs);
    if (refusal !== null) throw this.refuse(t.laneRef, refusal);
  }

  /**
   * A waiter whose key's buckets cannot cover it now leaves the queue with their refusal, true
   * then: a key's budget makes no call wait, least of all ahead of other keys' calls
   * (`key-meter.ts`). Reached only when the level fell after its arrival was checked — usage above
   * the estimates, or another replica of a fleet spending the same bucket.
   */
  protected leavesForKey(lane: Lane<Ticket>, t: Ticket, nowMs: number): boolean {
    const meter = t.key?.meter ?? null;
    if (meter === null || meter.hasRoom(t.rank, t.tokens, nowMs)) return false;
    this.remove(lane, t, nowMs); // first: its own estimate is no longer ahead of itself
    const refusal = meter.refusal(lane.name, t.tokens, nowMs);
    if (refusal === null) {
      this.push(lane, t, nowMs); // never: no room means the refusal has a shortfall to name
      return false;
    }
    this.reject(t, this.refuse(lane, refusal));
    return true;
  }

  /** The path `t` would be granted on now: its class and estimate, the pods that refused it, its key's budgets. */
  protected pathFor(lane: Lane<Ticket>, t: Ticket, nowMs: number): Path | null {
    const meter = t.key?.meter ?? null;
    return lane.choosePath(t.rank, nowMs, t.tokens, t.dispatch?.refusedBy ?? null, false, meter);
  }

  /** The lane's part of `t`'s path: the lane's, with its key's budgets when it has them (`key-meter.ts`). */
  protected lanePathOf(t: Ticket): Path {
    const meter = t.key?.meter ?? null;
    return meter === null ? t.laneRef.lanePath : meter.pathOf(t.laneRef.lanePath);
  }

  /** Gives back the pod's part of `t`'s path; `t` keeps its lane's part. */
  protected leavePod(t: Ticket, nowMs: number): void {
    const path = t.path!;
    this.store.give(path, t.tokens, nowMs, path.podStart);
    t.path = this.lanePathOf(t);
  }

  /**
   * A fleet store refused to confirm `t`'s grant (another replica holds the room): take back what
   * was taken locally and put `t` back in line at its place (its arrival time is unchanged). Its
   * key slot and a half-open probe it was given go back too.
   */
  requeue(t: Ticket, nowMs: number): void {
    if (t.state !== "granted" || t.path === null) return;
    this.dropPod(t, nowMs);
    const path = t.path!;
    t.path = null;
    this.rollback(path, t.tokens, nowMs, 0);
    if (t.key !== null) t.key.ended(t.laneRef.slot);
    this.push(t.laneRef, t, nowMs);
  }

  /**
   * A fleet store refused the pod part of a re-dispatch: take the pod part back locally; `t` keeps
   * its lane's part (already confirmed) and no pod attempt.
   */
  dropPod(t: Ticket, nowMs: number): void {
    const path = t.path;
    const d = t.dispatch;
    if (path === null || path.pod === null) return;
    if (d !== null && d.pod !== null) {
      if (d.probe) d.pod.breaker.onProbeAbandoned();
      d.probe = false;
      d.pod = null;
    }
    this.rollback(path, t.tokens, nowMs, path.podStart);
    t.path = this.lanePathOf(t);
  }

  /** Gives back locally what a take took and the fleet never confirmed. */
  protected rollback(path: Path, cost: number, nowMs: number, from: number): void {
    if (isFleetStore(this.store)) this.store.rollback(path, cost, nowMs, from);
    else this.store.give(path, cost, nowMs, from);
  }
}
