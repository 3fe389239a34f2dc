/**
 * The governor's one timer (STYLE G2): the core never sets timers, it says when it next changes
 * by itself (`Scheduler.nextWakeAt`: a queue deadline, a cooldown or pause ending, a refill), and
 * this shell keeps exactly one timer armed for that moment — through the injected clock, so a
 * `ManualClock` drives it in tests — and none while nothing waits, so an idle governor never
 * keeps the process alive.
 */
import type { Clock } from "../core/clock.js";
import type { Lane } from "../core/lane.js";
import type { Ticket } from "../core/lease.js";
import type { Scheduler } from "../core/scheduler.js";

function allChangeOnlyAtDeadlines(lanes: Iterable<Lane<Ticket>>): boolean {
  for (const lane of lanes) if (!lane.changesOnlyAtDeadlines) return false;
  return true;
}

export class WakeTimer {
  #cancel: (() => void) | undefined;
  #at = Number.POSITIVE_INFINITY;

  constructor(
    readonly clock: Clock,
    readonly scheduler: Scheduler,
  ) {}

  /** Arms the timer for the scheduler's next self-change, or disarms it when nothing waits. */
  arm(now = this.clock.now()): void {
    if (this.scheduler.waitingLanes.size === 0) {
      this.stop();
      return;
    }
    const at = this.scheduler.nextWakeAt(now);
    if (at === undefined || at >= this.#at) return;
    this.#cancel?.();
    this.#at = at;
    this.#cancel = this.clock.setTimer(at, this.#wake);
  }

  /**
   * A waiter joined `lane` at `now`. Its lane only changes at deadlines and the timer is set no
   * later than its deadline (every earlier waiter's comes first): nothing to move. Otherwise as
   * `arm`. (Asked on every queued arrival.)
   */
  queued(lane: Lane<Ticket>, now: number): void {
    if (this.#at <= now + lane.settings.queueTimeoutMs && lane.changesOnlyAtDeadlines) return;
    this.arm(now);
  }

  /**
   * A lease ended, and the waiters it let through left their queues. In lanes that change only at
   * deadlines, waiters leaving can only move the earliest deadline later, so a timer already set
   * stays (if it fires early, the tick finds nothing due and sets it again). Otherwise as `arm`.
   * (Asked on every release.)
   */
  released(now: number): void {
    const waiting = this.scheduler.waitingLanes;
    if (waiting.size === 0) {
      this.stop();
      return;
    }
    if (this.#cancel === undefined || !allChangeOnlyAtDeadlines(waiting)) this.arm(now);
  }

  /** Whether a wake-up is set. */
  get armed(): boolean {
    return this.#cancel !== undefined;
  }

  /** Disarms the timer. */
  stop(): void {
    if (this.#cancel === undefined) return;
    this.#cancel();
    this.#cancel = undefined;
    this.#at = Number.POSITIVE_INFINITY;
  }

  /**
   * The timer fired: expire, grant, re-arm — all at one reading of the clock. With two readings
   * a pod change falling between them (a cooldown or pause ending at 919.4 ms, the pass at 919,
   * the re-arm at 920) was seen by neither: too early for the pass, already past for
   * `nextWakeAt`, so its waiter sat until its queue timeout (issue 14). A timer that fires
   * before its time (libuv's cached loop time, a jittery clock) needs nothing more: the change
   * is still ahead of that reading, so `nextWakeAt` names it and the timer is armed again.
   */
  readonly #wake = (): void => {
    this.#cancel = undefined;
    this.#at = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    this.scheduler.tick(now);
    this.arm(now);
  };
}
