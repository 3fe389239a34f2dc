/**
 * A pod's circuit breaker (DESIGN §1.4, seed 001), a discriminated union whose transitions live
 * in `#open` and `#close` only (STYLE G4, after cockatiel's `InnerState`).
 *
 * CLOSED → OPEN after `failThreshold` consecutive overload signals. OPEN: no dispatch for
 * `baseCooldownMs × backoffFactor^(trips−1)`, capped at `maxCooldownMs`, ±20 % jitter so pods
 * don't re-open in lock-step. Then HALF_OPEN: exactly one probe; a non-overload outcome closes
 * it and resets the backoff, an overload re-opens it with the next cooldown.
 *
 * `enabled: false` (seed 001's switch) keeps it CLOSED whatever happens: the overload signals are
 * still counted (and still cut the pod's width, which is not the breaker's business), but none
 * opens it, so the pod is never isolated.
 */

import { DEFAULTS } from "./defaults.js";

/**
 * The breaker's whole state, plain JSON so a store can share it and a restored breaker carries on
 * exactly where the saved one was ({@link Breaker.fromJSON}). `consecutive` is the real run of
 * overload signals while closed: the trip rule reads it from here, it keeps no count of its own.
 */
export type BreakerState =
  | { kind: "closed"; consecutive: number }
  | { kind: "open"; openedAt: number; trips: number; cooldownMs: number }
  | { kind: "half_open"; trips: number; probeInFlight: boolean };

/** Options for {@link Breaker}; units in the names (STYLE G8). Defaults: `DEFAULTS.breaker`. */
export interface BreakerOptions {
  /**
   * `false`: the breaker never opens (the pod is always dispatched to, within its width); the
   * width still adapts. **Default:** `true`.
   */
  enabled?: boolean;
  /** Consecutive overload signals that open the breaker. **Default:** 1 (react to the first sign). */
  failThreshold?: number;
  /** First cooldown. **Default:** 500 ms. */
  baseCooldownMs?: number;
  /** Cooldown cap. **Default:** 30 000 ms. */
  maxCooldownMs?: number;
  /** Growth per repeated trip. **Default:** 2. */
  backoffFactor?: number;
}

/** Breaker options with every default applied (what `resolveLane` produces). */
export type BreakerSettings = Required<BreakerOptions>;

/**
 * The trip rule, separate from the state machine (cockatiel's `IBreaker`). It decides from the
 * count held in {@link BreakerState}, so a policy holds no state that JSON would lose.
 */
export interface TripPolicy {
  /** Whether a run of `consecutive` overload signals (this one included) opens the breaker. */
  shouldOpen(consecutive: number): boolean;
}

/** Opens after `threshold` consecutive failures. */
export class ConsecutiveTrip implements TripPolicy {
  constructor(readonly threshold: number) {}

  shouldOpen(consecutive: number): boolean {
    return consecutive >= this.threshold;
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
  readonly #enabled: boolean;
  readonly #base: number;
  readonly #max: number;
  readonly #factor: number;
  readonly #random: () => number;
  readonly #onChange: ((t: BreakerTransition) => void) | undefined;

  /**
   * @param options resolved settings; a missing one takes `DEFAULTS.breaker` (for direct use in tests).
   * @param random jitter source in [0, 1).
   */
  constructor(
    options: BreakerOptions = {},
    random: () => number = Math.random,
    onChange?: (t: BreakerTransition) => void,
  ) {
    const d = DEFAULTS.breaker;
    this.#enabled = options.enabled ?? d.enabled;
    this.#policy = new ConsecutiveTrip(options.failThreshold ?? d.failThreshold);
    this.#base = options.baseCooldownMs ?? d.baseCooldownMs;
    this.#max = options.maxCooldownMs ?? d.maxCooldownMs;
    this.#factor = options.backoffFactor ?? d.backoffFactor;
    this.#random = random;
    this.#onChange = onChange;
  }

  /**
   * A breaker that continues from `state` (a {@link toJSON} result, e.g. read back from a store):
   * with the same settings and random source it answers every later call as the saved one would.
   *
   * @throws TypeError when `state` is not a breaker state.
   */
  static fromJSON(
    state: BreakerState,
    options: BreakerOptions = {},
    random: () => number = Math.random,
    onChange?: (t: BreakerTransition) => void,
  ): Breaker {
    const breaker = new Breaker(options, random, onChange);
    breaker.#state = checkState(state);
    // Switched off (a reload to `enabled: false`) while open: the pod is freed at once, not at
    // the end of a cooldown that no longer means anything.
    if (!breaker.#enabled && breaker.#state.kind !== "closed") breaker.#close();
    return breaker;
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
      s.consecutive = 0; // in place: a count within CLOSED is not a transition
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
    if (!this.#enabled) {
      // Disabled: counted, never opens (and it is never anything but closed: see fromJSON).
      if (s.kind === "closed") s.consecutive++;
      return false;
    }
    if (s.kind === "closed") {
      // Counted even when the breaker may not open (half the lane's pods are open already), so the
      // next signal after that rule lifts opens it at once, as the run of failures says it should.
      s.consecutive++;
      if (this.#policy.shouldOpen(s.consecutive) && mayOpen) {
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
    this.#set({ kind: "closed", consecutive: 0 });
  }

  #set(next: BreakerState): void {
    const from = this.#state.kind;
    this.#state = next;
    this.#onChange?.({ from, to: next.kind, state: next });
  }

  /** A copy of the state (plain JSON). */
  toJSON(): BreakerState {
    return { ...this.#state };
  }
}

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isTime = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** A copy of `s` when it is a valid {@link BreakerState}. */
function checkState(s: BreakerState): BreakerState {
  const bad = (field: string, value: unknown): never => {
    throw new TypeError(`breaker state: ${field} is invalid (${JSON.stringify(value)})`);
  };
  switch (s?.kind) {
    case "closed":
      if (!isCount(s.consecutive)) bad("consecutive", s.consecutive);
      return { kind: "closed", consecutive: s.consecutive };
    case "open":
      if (!isTime(s.openedAt)) bad("openedAt", s.openedAt);
      if (!isCount(s.trips) || s.trips < 1) bad("trips", s.trips);
      if (!isTime(s.cooldownMs) || s.cooldownMs < 0) bad("cooldownMs", s.cooldownMs);
      return { kind: "open", openedAt: s.openedAt, trips: s.trips, cooldownMs: s.cooldownMs };
    case "half_open":
      if (!isCount(s.trips) || s.trips < 1) bad("trips", s.trips);
      if (typeof s.probeInFlight !== "boolean") bad("probeInFlight", s.probeInFlight);
      return { kind: "half_open", trips: s.trips, probeInFlight: s.probeInFlight };
    default:
      return bad("kind", (s as { kind?: unknown } | undefined)?.kind);
  }
}
