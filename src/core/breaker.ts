/**
 * A pod's circuit breaker (DESIGN §1.4, seed 001), a discriminated union whose transitions live
 * in `#open` and `#close` only (STYLE G4, after cockatiel's `InnerState`).
 *
 * CLOSED → OPEN after `failThreshold` consecutive overload signals. OPEN: no dispatch for
 * `baseCooldownMs × backoffFactor^(trips−1)`, capped at `maxCooldownMs`, ±20 % jitter so pods
 * don't re-open in lock-step. Then HALF_OPEN: exactly one probe; a non-overload outcome closes
 * it and resets the backoff, an overload re-opens it with the next cooldown.
 */

export type BreakerState =
  | { kind: "closed"; consecutive: number }
  | { kind: "open"; openedAt: number; trips: number; cooldownMs: number }
  | { kind: "half_open"; trips: number; probeInFlight: boolean };

/** Options for {@link Breaker}; units in the names (STYLE G8). */
export interface BreakerOptions {
  /** Consecutive overload signals that open the breaker. **Default:** 1 (react to the first sign). */
  failThreshold?: number;
  /** First cooldown. **Default:** 500 ms. */
  baseCooldownMs?: number;
  /** Cooldown cap. **Default:** 30 000 ms. */
  maxCooldownMs?: number;
  /** Growth per repeated trip. **Default:** 2. */
  backoffFactor?: number;
}

/** The trip rule, separate from the state machine (cockatiel's `IBreaker`). */
export interface TripPolicy {
  success(): void;
  /** Counts one failure; true when the breaker should open. */
  failure(): boolean;
}

/** Opens after `threshold` consecutive failures. */
export class ConsecutiveTrip implements TripPolicy {
  #count = 0;

  constructor(readonly threshold: number) {}

  success(): void {
    this.#count = 0;
  }

  failure(): boolean {
    return ++this.#count >= this.threshold;
  }
}

/** A state change, for `onStateChange` listeners and metrics. */
export interface BreakerTransition {
  from: BreakerState["kind"];
  to: BreakerState["kind"];
  state: BreakerState;
}

export class Breaker {
  #state: BreakerState = { kind: "closed", consecutive: 0 };
  readonly #policy: TripPolicy;
  readonly #base: number;
  readonly #max: number;
  readonly #factor: number;
  readonly #random: () => number;
  readonly #onChange: ((t: BreakerTransition) => void) | undefined;

  constructor(
    options: BreakerOptions = {},
    random: () => number = Math.random,
    onChange?: (t: BreakerTransition) => void,
  ) {
    this.#policy = new ConsecutiveTrip(options.failThreshold ?? 1);
    this.#base = options.baseCooldownMs ?? 500;
    this.#max = options.maxCooldownMs ?? 30_000;
    this.#factor = options.backoffFactor ?? 2;
    this.#random = random;
    this.#onChange = onChange;
  }

  get state(): Readonly<BreakerState> {
    return this.#state;
  }

  get kind(): BreakerState["kind"] {
    return this.#state.kind;
  }

  /** True while OPEN and still cooling down. A pure read: it never takes the half-open probe. */
  isTripped(nowMs: number): boolean {
    const s = this.#state;
    return s.kind === "open" && nowMs < s.openedAt + s.cooldownMs;
  }

  /** When an OPEN breaker's cooldown ends; undefined otherwise. */
  reopensAt(): number | undefined {
    const s = this.#state;
    return s.kind === "open" ? s.openedAt + s.cooldownMs : undefined;
  }

  /** Whether a call may be dispatched now (a cooled-down OPEN breaker allows the probe). */
  allows(nowMs: number): boolean {
    const s = this.#state;
    if (s.kind === "closed") return true;
    if (s.kind === "open") return nowMs >= s.openedAt + s.cooldownMs;
    return !s.probeInFlight;
  }

  /** Records a dispatch; returns true when it is the half-open probe. Call only when `allows`. */
  onDispatch(nowMs: number): boolean {
    const s = this.#state;
    if (s.kind === "closed") return false;
    if (s.kind === "open") {
      if (nowMs < s.openedAt + s.cooldownMs) return false;
      this.#set({ kind: "half_open", trips: s.trips, probeInFlight: true });
      return true;
    }
    s.probeInFlight = true;
    return true;
  }

  /**
   * A non-overload outcome. Returns true when it closed the breaker (the pod recovers slowly).
   * Outcomes of calls dispatched before a trip (not the probe) do not move an open breaker.
   */
  onSuccess(isProbe: boolean): boolean {
    const s = this.#state;
    if (s.kind === "closed") {
      this.#policy.success();
      return false;
    }
    if (s.kind === "half_open" && isProbe) {
      this.#close();
      return true;
    }
    return false;
  }

  /**
   * An overload signal that counts (DESIGN §1.4). `mayOpen` is false when the lane already has
   * half its pods open; then the breaker stays closed. Returns true when it opened.
   */
  onFailure(nowMs: number, isProbe: boolean, mayOpen = true): boolean {
    const s = this.#state;
    if (s.kind === "closed") {
      if (this.#policy.failure() && mayOpen) {
        this.#open(nowMs, 1);
        return true;
      }
      return false;
    }
    if (s.kind === "half_open" && isProbe) {
      this.#open(nowMs, s.trips + 1);
      return true;
    }
    return false;
  }

  /** The probe ended with no verdict (aborted, ignored): let another call probe. */
  onProbeAbandoned(): void {
    const s = this.#state;
    if (s.kind === "half_open") s.probeInFlight = false;
  }

  #open(nowMs: number, trips: number): void {
    const raw = Math.min(this.#max, this.#base * this.#factor ** (trips - 1));
    const jitter = 0.8 + 0.4 * this.#random(); // ±20 %
    this.#set({ kind: "open", openedAt: nowMs, trips, cooldownMs: raw * jitter });
  }

  #close(): void {
    this.#policy.success();
    this.#set({ kind: "closed", consecutive: 0 });
  }

  #set(next: BreakerState): void {
    const from = this.#state.kind;
    this.#state = next;
    this.#onChange?.({ from, to: next.kind, state: next });
  }

  toJSON(): BreakerState {
    return { ...this.#state };
  }
}
