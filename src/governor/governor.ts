/**
 * The imperative shell around the pure core (STYLE G2, G11): it owns the clock, the single
 * timer, AbortSignals and promises, and hands the scheduler `nowMs`. One process, memory store;
 * a fleet store plugs in behind the same calls (its hooks: fleet-hooks.ts). What it answers
 * without changing anything (pre-body checks, header numbers) is in reads.ts.
 */
import { channel } from "node:diagnostics_channel";
import { hostname } from "node:os";
import type { BreakerTransition } from "../core/breaker.js";
import { type Clock, systemClock } from "../core/clock.js";
import type { SluiceError } from "../core/errors.js";
import { Emitter, type Event } from "../core/events.js";
import { Lane } from "../core/lane.js";
import { type Lease, Ticket, type TicketOwner } from "../core/lease.js";
import { type GovernorOptions, type ResolvedOptions, resolveGovernorOptions } from "../core/options.js";
import { classifyOutcome, type FailureInput, type Outcome } from "../core/outcome.js";
import type { Pod } from "../core/pod.js";
import { DEFAULT_RANK, type Priority, type Rank, rankOrThrow } from "../core/priority.js";
import type { RateLimitInfo } from "../core/rate-limits.js";
import {
  type GrantEvent,
  type RefusalEvent,
  type ReleaseEvent,
  Scheduler,
  type WidthEvent,
} from "../core/scheduler.js";
import type { LaneStatus, Snapshot } from "../core/snapshot.js";
import type { Store } from "../core/store.js";
import { MemoryStore } from "../store/memory.js";
import { type AcquireOptions, type BreakerEvent, capped, tokenEstimate } from "./acquire-options.js";
import { currentPriority } from "./context.js";
import { type FleetHooks, wireFleetHooks } from "./fleet-hooks.js";
import { arrivalRefusal, keyRefusal, laneRateLimits, laneStatusOf, type ReadParts } from "./reads.js";
import { Registry } from "./registry.js";
import { route } from "./route.js";
import { Signal } from "./signal.js";
import { type CallContext, runWithLease, type StreamOptions, streamWithLease } from "./stream.js";
import { WakeTimer } from "./timer.js";
import { Waiters } from "./waiters.js";

const grantChannel = channel("sluice:lease:grant");
const releaseChannel = channel("sluice:lease:release");
const SUCCESS: Outcome = { kind: "success" };
const NO_OPTIONS: AcquireOptions = Object.freeze({}); // acquire() without options: no `{}` per call

/**
 * One executor for every waiting acquire: it hands out the promise's resolve function without
 * allocating a closure per waiter (a 100,000-deep queue is made of these).
 */
let captured: ((value: Lease | PromiseLike<Lease>) => void) | null = null;
const captureResolve = (resolve: (value: Lease | PromiseLike<Lease>) => void): void => {
  captured = resolve;
};

/**
 * Bounds model calls inside one process: lanes with priority queues, shared group budgets, key
 * budgets, and pods with adaptive width and breakers (DESIGN §1, §2).
 */
export class Governor {
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #scheduler: Scheduler;
  readonly #store: Store;
  readonly #registry: Registry;
  readonly #replica = `${hostname()}:${process.pid}`;
  readonly #timer: WakeTimer;
  readonly #waiters: Waiters;
  /** What the reads (reads.ts) look at. */
  readonly #reads: ReadParts;
  /** A fleet store's hooks (fleet-hooks.ts); null with one process's store. */
  readonly #fleet: FleetHooks | null;
  #closed = false;
  readonly #breakerChanges = new Emitter<BreakerEvent>();
  readonly #idle = new Signal(); // who waits for the last admitted request to leave

  /** A lease was granted (typed, opt-in: payloads are built only when someone listens). */
  readonly onGrant: Event<GrantEvent>;
  /** A lease ended. */
  readonly onRelease: Event<ReleaseEvent>;
  /** sluice refused a call (queue full, shed, key limit, queue timeout). */
  readonly onRefusal: Event<RefusalEvent>;
  /** A pod's adaptive width moved. */
  readonly onWidthChange: Event<WidthEvent>;
  /** A pod's breaker changed state. */
  readonly onBreakerChange: Event<BreakerEvent> = this.#breakerChanges.event;

  constructor(options: GovernorOptions = {}) {
    // Validated once, every default applied (STYLE G7): invalid options fail here, not later.
    const resolved = resolveGovernorOptions(options);
    this.#clock = resolved.clock ?? systemClock;
    this.#random = resolved.random ?? Math.random;
    this.#store = resolved.store ?? new MemoryStore();
    // Counted in place (`Grants.inPlace`) when the store says its commit and give are plain counts.
    this.#scheduler = new Scheduler(
      {
        granted: (t) => this.#waiters.granted(t),
        rejected: (t, error) => this.#waiters.settle(t, error),
      },
      this.#store,
    );
    this.#timer = new WakeTimer(this.#clock, this.#scheduler);
    this.#waiters = new Waiters(this.#clock, this.#scheduler, this.#timer, this.#store);
    this.onGrant = this.#scheduler.onGrant.event;
    this.onRelease = this.#scheduler.onRelease.event;
    this.onRefusal = this.#scheduler.onRefusal.event;
    this.onWidthChange = this.#scheduler.onWidthChange.event;
    this.#registry = new Registry(
      resolved,
      this.#store,
      this.#random,
      this.#owner,
      (lane, pod, t) => this.#onBreaker(lane, pod, t),
      () => this.#clock.now(),
    );
    this.#reads = { registry: this.#registry, scheduler: this.#scheduler, clock: this.#clock };
    // A fleet store shares pods' state, advertises waiters and wakes them (fleet-hooks.ts).
    this.#fleet = wireFleetHooks({
      store: this.#store,
      clock: this.#clock,
      scheduler: this.#scheduler,
      timer: this.#timer,
      waiters: this.#waiters,
      registry: this.#registry,
    });
  }

  /**
   * Waits for a slot on every budget of `lane`'s path and returns the lease. Rejects at once with
   * `QueueFullError` / `KeyLimitError` when sluice says no, later with `QueueTimeoutError`, or with
   * `signal.reason` on abort. Queue wait never counts toward the call's own timeout.
   */
  acquire(lane: string, options: AcquireOptions = NO_OPTIONS): Promise<Lease> {
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const first = this.#registry.lane(lane);
    if (first === null) return Promise.resolve(this.#registry.passThrough.get(lane)!);
    if (this.#closed) return Promise.reject(new Error("Governor is closed"));
    const priority = options.priority ?? currentPriority();
    let asked: Rank = DEFAULT_RANK;
    try {
      if (priority !== undefined) asked = rankOrThrow(priority);
    } catch (error) {
      return Promise.reject(error);
    }
    const key = this.#registry.key(options.key);
    const rank = capped(asked, key);
    const tokens = tokenEstimate(options.tokens);
    if (typeof tokens !== "number") return Promise.reject(tokens); // not instanceof: a chain walk
    const now = this.#clock.now();
    const laneState = route(this.#registry, this.#scheduler, first, now, options.failFast === true);
    if (laneState !== first && !(laneState instanceof Lane)) return Promise.reject(laneState);
    const t = new Ticket(laneState, rank, options.arrivedAt ?? now, key);
    if (tokens !== 0) t.tokens = tokens; // the setter is a call; 0 is the default
    if (signal !== undefined) t.abort = { signal, detach: null };
    let admitted: "granted" | "queued";
    try {
      admitted = options.wait === false ? this.#scheduler.admitNow(t, now) : this.#scheduler.admit(t, now);
    } catch (error) {
      return Promise.reject(error);
    }
    if (admitted === "granted" && !this.#waiters.confirming) {
      if (grantChannel.hasSubscribers) grantChannel.publish(t);
      return Promise.resolve(t);
    }
    const promise = new Promise<Lease>(captureResolve);
    t.resolve = captured;
    captured = null;
    if (signal !== undefined) this.#waiters.listenForAbort(t, signal);
    // A fleet store confirms even a grant made on arrival, and a bounded key's slot, before the lease.
    this.#waiters.arrived(t, admitted === "granted");
    if (admitted === "queued") this.#timer.queued(laneState, now);
    else this.#timer.arm(now);
    return promise;
  }

  /**
   * The refusal an arrival would get right now, without queueing it: checked before a request
   * body is read (DESIGN §3.1 step 2). Undefined when it would be admitted or queued.
   */
  check(
    lane: string,
    options: { priority?: Priority; key?: string; tokens?: number } = {},
  ): SluiceError | undefined {
    return arrivalRefusal(this.#reads, lane, options);
  }

  /** The key's refusal if it is at its in flight + queued bound now (pre-body, lane unknown). */
  checkKey(key: string): SluiceError | undefined {
    return keyRefusal(this.#registry, key);
  }

  /**
   * The admission bound's refusal for one more request now (`options.admission`: too many
   * admitted and not yet ended), with a Retry-After from the drain rate; undefined when it fits
   * or no bound is set. Counts nothing: checked before a request body is read.
   */
  admissionRefusal(): SluiceError | undefined {
    const error = this.#registry.admission?.refusal();
    if (error !== undefined && this.#scheduler.onRefusal.size > 0)
      this.#scheduler.onRefusal.emit({ lane: error.lane, error });
    return error;
  }

  /**
   * Counts one request as admitted until `leave()`: from before its body is read to its end,
   * whatever lane it goes to. Call after `admissionRefusal()` said it fits (or to let it through
   * anyway in shadow mode); every `enter()` needs exactly one `leave()`.
   */
  enter(): void {
    this.#registry.admission?.enter();
  }

  /** An admitted request ended (answered, refused later, or abandoned). */
  leave(): void {
    if (this.#registry.admission?.leave() === true) this.#idle.wake();
  }

  /** Requests admitted and not yet left (0 without an admission bound). */
  get admitted(): number {
    return this.#registry.admission?.entered ?? 0;
  }

  /** Resolves once no admitted request is left (a draining gateway waits on it). */
  whenIdle(): Promise<void> {
    return this.admitted === 0 ? Promise.resolve() : this.#idle.wait();
  }

  /**
   * The token and request buckets a call on `lane` crosses now (its own `tpm` / `rpm`, then its
   * account's): what the gateway's `RateLimit` and `x-ratelimit-*` answer headers report. What
   * `remaining` says is for a call of class `priority`: a class other than interactive may not
   * take the buckets' interactive reserve, so it is told what it can use. **Default:** interactive
   * (the whole level). With `key`, that key's buckets and its tenant's follow.
   */
  rateLimits(lane: string, priority: Priority = "interactive", key?: string): RateLimitInfo[] {
    return laneRateLimits(this.#reads, lane, priority, key);
  }

  /**
   * A lane's current numbers for refusal headers, and with `withState` why its callers wait
   * (`core/wait-state.ts`: it walks the pods, so the admission fast path does not ask for it);
   * undefined for unknown or pass-through lanes.
   */
  laneStatus(lane: string, withState = false): LaneStatus | undefined {
    return laneStatusOf(this.#reads, lane, withState);
  }

  /**
   * A lease at once if a slot is free now, else `undefined` — nothing queued, refused or counted.
   * The gateway's fast path: only a call that must wait pays for an AbortSignal and a promise.
   * Lanes whose pods are all tripped or paused answer `undefined` (use `acquire` for fallback,
   * failFast and the quota refusal).
   */
  tryAcquire(lane: string, options: Omit<AcquireOptions, "signal" | "wait"> = {}): Lease | undefined {
    // The same lane `acquire` would use: configured, or made from `defaults` on first use (a
    // lane looked up without being made was never granted by tryAcquire alone: seed 000's shape).
    const laneState = this.#registry.lane(lane);
    if (laneState === null) return this.#registry.passThrough.get(lane)!;
    // With a fleet store every grant waits for the fleet's answer: no lease is ever immediate.
    if (this.#closed || this.#waiters.confirming) return undefined;
    const asked = rankOrThrow(options.priority ?? currentPriority() ?? "default");
    const tokens = tokenEstimate(options.tokens);
    if (tokens instanceof Error) throw tokens;
    const key = this.#registry.key(options.key);
    const now = this.#clock.now();
    if (route(this.#registry, this.#scheduler, laneState, now, false) !== laneState) return undefined;
    const t = new Ticket(laneState, capped(asked, key), options.arrivedAt ?? now, key);
    t.tokens = tokens;
    if (!this.#scheduler.grantIfFree(t, now)) return undefined;
    if (grantChannel.hasSubscribers) grantChannel.publish(t);
    return t;
  }

  /** Runs `fn` holding a slot; success or failure feeds the pod, and the slot is always released. */
  run<R>(lane: string, fn: (ctx: CallContext) => Promise<R>, options: AcquireOptions = {}): Promise<R> {
    return runWithLease(this, lane, fn, options);
  }

  /**
   * Yields a stream's items while holding one slot until the stream is exhausted, throws, or the
   * consumer stops. A failure before any item releases, backs off and re-acquires keeping the
   * original arrival time; a queue timeout is never retried (DESIGN §1.2).
   */
  stream<T>(
    lane: string,
    factory: (ctx: CallContext) => AsyncIterable<T> | Promise<AsyncIterable<T>>,
    options: StreamOptions = {},
  ): AsyncIterable<T> {
    return streamWithLease(this, this.#clock, this.#random, lane, factory, options);
  }

  /** True while `pod`'s breaker is open and cooling down. A pure read: it takes no probe. */
  isTripped(pod: string): boolean {
    return this.#registry.pods.get(pod)?.breaker.isTripped(this.#clock.now()) ?? false;
  }

  /** Reports server-side saturation (e.g. vLLM's waiting queue) as a congestion signal. */
  reportSaturation(pod: string): void {
    const p = this.#registry.pods.get(pod);
    if (p === undefined) return;
    const before = p.width.width;
    p.width.onCongestion(p.width.epoch, p.inflight);
    if (p.width.width !== before) this.#timer.arm();
  }

  /** The pod's own running count (its `metrics_url`), trusted for `freshForMs` (Pod.report). */
  reportRunning(pod: string, running: number, freshForMs: number): void {
    const p = this.#registry.pods.get(pod);
    const now = this.#clock.now();
    if (p?.report(running, now, freshForMs) === true) this.#scheduler.tick(now);
    this.#timer.arm(now); // a waiter held only by the report wakes when it goes stale
  }

  /**
   * Applies new options to the live governor without dropping a call (a config reload). Validates
   * first: on a `ConfigError` nothing changes. Lane limits, reserve, queue limit and timeout,
   * aging, fallback, keys, groups, pods and the admission bound change in place — calls in flight
   * keep their slots and are released into the new limits; waiters keep their place and are
   * granted at once if the new limits have room. New lanes and pods are added; a lane or pod no
   * longer listed stops taking new calls, and its calls in flight and waiters finish normally.
   * Clock, random and store are kept (they are the process's, not the configuration's).
   */
  reconfigure(options: GovernorOptions | ResolvedOptions): void {
    const resolved = resolveGovernorOptions(options);
    this.#registry.apply(resolved);
    const now = this.#clock.now();
    this.#scheduler.tick(now);
    this.#timer.arm(now);
  }

  /** The snapshot: lanes, pods, groups, keys, the admission bound. Plain data. */
  snapshot(): Snapshot {
    return this.#registry.snapshot(this.#clock.now(), this.#replica);
  }

  /** Stops the timer; later acquires reject. Waiters already queued keep their promises. */
  close(): void {
    this.#closed = true;
    this.#timer.stop();
  }

  /**
   * Where leases report their endings, off the public surface: one class for every governor, as
   * per-governor closures deoptimized `lease.release()` ("wrong call target") per new governor.
   */
  static readonly #Owner = class implements TicketOwner {
    constructor(readonly gov: Governor) {}
    end(t: Ticket, failure: FailureInput | undefined, outcomeKnown: boolean): void {
      this.gov.#end(t, failure, outcomeKnown);
    }
    abandon(t: Ticket): void {
      this.gov.#waiters.abandon(t);
    }
    retry(t: Ticket, failure: FailureInput | undefined): Promise<boolean> {
      return this.gov.#waiters.retry(t, failure);
    }
  };

  readonly #owner: TicketOwner = new Governor.#Owner(this);

  /** A lease ended. */
  #end(t: Ticket, failure: FailureInput | undefined, outcomeKnown: boolean): void {
    const outcome = outcomeKnown ? (failure === undefined ? SUCCESS : classifyOutcome(failure)) : null;
    const now = this.#clock.now();
    const granted = t.state === "granted";
    this.#scheduler.end(t, outcome, now);
    // The admission bound's drain rate: how long calls hold their slot, over every lane.
    if (granted) this.#registry.admission?.hold.record(now - t.grantedAt);
    if (releaseChannel.hasSubscribers) releaseChannel.publish(t);
    // Nothing waits and no timer is armed (the usual uncontended end): there is nothing to do.
    if (this.#scheduler.waitingLanes.size > 0 || this.#timer.armed) this.#timer.released(now);
  }

  #onBreaker(lane: string, pod: Pod, t: BreakerTransition): void {
    this.#fleet?.sharePod(pod);
    if (this.#breakerChanges.size > 0)
      this.#breakerChanges.emit({ lane, pod: pod.id, from: t.from, to: t.to });
  }
}
