/**
 * A pod: one upstream endpoint of a lane, enforcing the width its algorithm decides and the
 * breaker's verdict (DESIGN §1.3–1.4). The scheduler asks `hasRoom` at grant time (as of every
 * budget on the path) and reports each call's ending through `settle`.
 */
import { AimdWidth, FixedWidth, type WidthAlgorithm, type WidthState } from "./aimd.js";
import { Breaker, type BreakerOptions, type BreakerState, type BreakerTransition } from "./breaker.js";
import type { Budget, BudgetState } from "./budget.js";
import { DEFAULTS } from "./defaults.js";
import type { Outcome } from "./outcome.js";
import type { Rank } from "./priority.js";

/** How long a pod held at its floor by the half-open rule rests after each refusal. */
export const FLOOR_REST_MS = 250;

/** What the scheduler recorded about a call when it granted it a pod. */
export interface GrantRecord {
  /** Calls on the pod at the grant, counting this one. */
  inflightAtStart: number;
  /** The pod's width at the grant. */
  widthAtStart: number;
  /** The pod's congestion epoch at the grant. */
  epoch: number;
  /** This call is the half-open probe. */
  probe: boolean;
}

/** A pod's adaptive state as plain data, shared by a fleet's processes. */
export interface SharedPodState {
  width: WidthState;
  breaker: BreakerState;
  /** Ms left of a quota pause when it was shared. */
  quotaLeftMs: number;
}

/** What a pod's ending did, so the scheduler can tell listeners and wake waiters. */
export interface PodVerdict {
  widthChanged: boolean;
  breakerOpened: boolean;
  breakerClosed: boolean;
}

/**
 * A pod is a budget too: its limit is its adaptive width, and it has room only while its breaker
 * allows a call and no quota pause holds it. One URL is one pod, whichever lanes list it.
 */
export class Pod implements Budget {
  inflight = 0;
  /** Calls other processes have on this pod, as a fleet store last saw them (0 with the memory store). */
  others = 0;
  /**
   * Calls running at the pod that are not this process's, as the pod's own count last showed them
   * (`report`): the fleet's `others` may drop without those calls ending — a replica paused past
   * its lease is reclaimed while its calls still run, and a client going straight to the pod is
   * never counted — so until the report goes stale the pod's room counts at least these.
   */
  reportedOthers = 0;
  /** The pod's own running count at its last report (-1: never reported). */
  reportedRunning = -1;
  /** The last report counts before this time; after it, only the fleet's count does. */
  reportedUntil = 0;
  /** No dispatch before this time: a quota pause, or a floor-held pod's rest after a refusal. */
  pausedUntil = 0;
  /** The provider's quota pause alone (a 429 with a reset), capped at `maxQuotaPauseMs`. */
  quotaUntil = 0;
  /** Cap on one quota pause. */
  maxQuotaPauseMs: number = DEFAULTS.quota.maxPauseMs;
  /** The adaptive width; replaced only by {@link reconfigure}. */
  width: WidthAlgorithm;
  /** The circuit breaker; replaced only by {@link reconfigure}, keeping its state. */
  breaker: Breaker;
  /** The pod's part of a path: itself, then its GPU group if it has one. */
  budgets: readonly Budget[];
  readonly #random: () => number;
  readonly #onBreakerChange: (t: BreakerTransition) => void;
  #breakerOptions: BreakerOptions;

  constructor(
    readonly id: string,
    /** The operator's `maxInflight`: the width starts here and never grows past it. */
    public ceiling: number,
    /** The pod's GPU group budget, or null. */
    public group: Budget | null,
    adaptive: { floor: number } | false,
    breaker: BreakerOptions,
    random: () => number,
    onBreakerChange: (pod: Pod, t: BreakerTransition) => void,
  ) {
    this.#random = random;
    this.#breakerOptions = breaker;
    this.#onBreakerChange = (t) => onBreakerChange(this, t);
    this.width =
      adaptive === false ? new FixedWidth(ceiling) : new AimdWidth({ ceiling, floor: adaptive.floor });
    this.breaker = new Breaker(breaker, random, this.#onBreakerChange);
    this.budgets = group === null ? [this] : [this, group];
  }

  /**
   * New settings on a live pod (a config reload): calls in flight keep their slots, the breaker
   * keeps its state, and the width keeps what it learned — capped at a lower ceiling; a pod that
   * was never cut (at its old ceiling) starts at the new one.
   */
  reconfigure(
    ceiling: number,
    group: Budget | null,
    adaptive: { floor: number } | false,
    breaker: BreakerOptions,
  ): void {
    const old = this.width;
    if (adaptive === false) this.width = new FixedWidth(ceiling);
    else if (!(old instanceof AimdWidth)) this.width = new AimdWidth({ ceiling, floor: adaptive.floor });
    else {
      const s = old.toJSON();
      const floor = Math.min(adaptive.floor, ceiling);
      const width = s.width >= s.ceiling ? ceiling : Math.max(floor, Math.min(s.width, ceiling));
      this.width = AimdWidth.fromJSON({
        ...s,
        ceiling,
        floor,
        width,
        ssthresh: Math.min(s.ssthresh, ceiling),
        breakPoint: Math.min(s.breakPoint, ceiling),
      });
    }
    this.breaker = Breaker.fromJSON(this.breaker.toJSON(), breaker, this.#random, this.#onBreakerChange);
    this.#breakerOptions = breaker;
    this.ceiling = ceiling;
    this.group = group;
    this.budgets = group === null ? [this] : [this, group];
  }

  /**
   * The adaptive state other processes of a fleet share: width, breaker, quota pause. Times are
   * ages and time left, not clock readings: each process has its own monotonic clock.
   */
  shared(nowMs: number): SharedPodState {
    const breaker = this.breaker.toJSON();
    if (breaker.kind === "open") breaker.openedAt -= nowMs; // ≤ 0: how long ago it opened
    return { width: this.width.toJSON(), breaker, quotaLeftMs: Math.max(0, this.quotaUntil - nowMs) };
  }

  /**
   * Takes on what another process of the fleet saw (its cut, its breaker, its provider's pause),
   * so one refusal narrows the pod for every replica and an open breaker is open everywhere.
   * Calls in flight keep their slots; their outcomes count by the epoch rules as usual.
   */
  adopt(state: SharedPodState, nowMs: number): void {
    if (this.width instanceof AimdWidth && state.width.ceiling === this.ceiling)
      this.width = AimdWidth.fromJSON(state.width);
    const breaker = { ...state.breaker };
    if (breaker.kind === "open") breaker.openedAt += nowMs;
    // `probeInFlight` is this process's own probe. Another process's probe holds a call on the
    // pod, which the fleet counts (one probe fleet-wide); copying its flag would leave this
    // process waiting for ever if that process died with its probe out.
    if (breaker.kind === "half_open") {
      const own = this.breaker.state;
      breaker.probeInFlight = own.kind === "half_open" && own.probeInFlight;
    }
    this.breaker = Breaker.fromJSON(breaker, this.#breakerOptions, this.#random, this.#onBreakerChange);
    this.quotaUntil = Math.max(this.quotaUntil, nowMs + state.quotaLeftMs);
    this.pausedUntil = Math.max(this.pausedUntil, this.quotaUntil);
  }

  get name(): string {
    return this.id;
  }

  get adaptive(): boolean {
    return this.width instanceof AimdWidth;
  }

  /**
   * Has width to spare, breaker allowing, not paused (its GPU group is the next budget on the
   * path). In a fleet, a pod whose breaker is not closed takes one probe fleet-wide: while
   * another process holds a call there (its probe), this one waits for the shared outcome.
   * Others' calls count as the fleet counts them, or as the pod's fresh report shows them if
   * more (`report`). Without a report `reportedUntil` is 0: one comparison, and none allocates.
   */
  hasRoom(_rank: Rank, _cost: number, nowMs: number): boolean {
    const others =
      nowMs < this.reportedUntil && this.reportedOthers > this.others ? this.reportedOthers : this.others;
    return (
      this.inflight + others < this.width.width &&
      this.pausedUntil <= nowMs &&
      this.breaker.allows(nowMs) &&
      (this.others === 0 || this.breaker.kind === "closed")
    );
  }

  /**
   * The pod's own running count (vLLM's `num_requests_running`), read now and trusted for
   * `freshForMs`. What runs there beyond this process's own calls stays counted until the next
   * report, even when the fleet stops counting it: this process's calls free their slots as they
   * end (it sees them end), anyone else's as the pod's count shows them ending. Returns whether
   * the pod may have gained room (the caller looks at its waiters again).
   */
  report(running: number, nowMs: number, freshForMs: number): boolean {
    const before = nowMs < this.reportedUntil ? Math.max(this.others, this.reportedOthers) : this.others;
    this.reportedRunning = running;
    this.reportedOthers = Math.max(0, running - this.inflight);
    this.reportedUntil = nowMs + freshForMs;
    return Math.max(this.others, this.reportedOthers) < before;
  }

  take(): void {
    this.inflight++;
  }

  give(): void {
    if (this.inflight > 0) this.inflight--;
  }

  toJSON(): BudgetState {
    return { name: this.id, limit: this.width.width, inflight: this.inflight };
  }

  /** Load used to pick the least loaded pod: the fraction of its width in use. */
  load(): number {
    return this.inflight / this.width.width;
  }

  /**
   * Applies one call's ending to the pod; `mayOpen` says whether the lane still allows another
   * open breaker (at most half of its pods).
   */
  settle(outcome: Outcome, grant: GrantRecord, nowMs: number, mayOpen: boolean): PodVerdict {
    const { probe, epoch } = grant;
    const before = this.width.width;
    const verdict: PodVerdict = { widthChanged: false, breakerOpened: false, breakerClosed: false };
    switch (outcome.kind) {
      case "success":
        this.width.onSuccess(grant.inflightAtStart, grant.widthAtStart, epoch);
        if (this.breaker.onSuccess(probe)) {
          verdict.breakerClosed = true;
          this.width.onRecovered();
        }
        break;
      case "congestion": {
        // With adaptive width the first refusal of an event only cuts; a refusal that persists
        // after the cut (or at the floor) is what the breaker counts (DESIGN §1.4).
        const answer = this.width.onCongestion(epoch, this.inflight);
        if (answer === "persistent" || probe) {
          verdict.breakerOpened = this.breaker.onFailure(nowMs, probe, mayOpen);
          if (!verdict.breakerOpened && !mayOpen) {
            // Not allowed to isolate it: hold it at its floor and rest it briefly after each
            // refusal. A refusal frees its slot at once, so the floor alone bounds concurrency,
            // not the rate of doomed attempts (docs/adaptive.md, the dead-fleet scenario).
            this.width.holdAtFloor();
            this.pausedUntil = Math.max(this.pausedUntil, nowMs + FLOOR_REST_MS);
          }
        }
        break;
      }
      case "failure":
        verdict.breakerOpened = this.breaker.onFailure(nowMs, probe, mayOpen);
        break;
      case "quota":
        // Capped: a provider's `Retry-After: 99999999` must not park the pod for years.
        this.quotaUntil = Math.max(this.quotaUntil, nowMs + Math.min(outcome.resetMs, this.maxQuotaPauseMs));
        this.pausedUntil = Math.max(this.pausedUntil, this.quotaUntil);
        if (probe) this.breaker.onProbeAbandoned();
        break;
      case "ignore":
        if (probe) this.breaker.onProbeAbandoned();
        break;
    }
    verdict.widthChanged = this.width.width !== before;
    return verdict;
  }

  /** When this pod next changes by itself (breaker cooldown, quota pause or a report's freshness ending). */
  nextChangeAt(nowMs: number): number | undefined {
    let at: number | undefined;
    const reopen = this.breaker.reopensAt();
    if (reopen !== undefined && reopen > nowMs) at = reopen;
    if (this.pausedUntil > nowMs && (at === undefined || this.pausedUntil < at)) at = this.pausedUntil;
    // A report holding room the fleet's count would give stops counting when it goes stale.
    const held = this.reportedUntil > nowMs && this.reportedOthers > this.others;
    if (held && (at === undefined || this.reportedUntil < at)) at = this.reportedUntil;
    return at;
  }
}
