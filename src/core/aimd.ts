/**
 * How wide a pod may be driven, decided apart from what enforces it (STYLE G1, Netflix's `Limit`
 * vs `Limiter`). AIMD after TCP (DESIGN §1.3, seed 000):
 *
 * - start at the operator's ceiling, so an install where nothing refuses never sees a change;
 * - a congestion signal sets width = max(floor, ⌊in flight at the refusal ÷ 2⌋) — TCP's
 *   ssthresh = FlightSize / 2; 64 configured, 58 in flight → 29;
 * - one cut per congestion event (NewReno's recovery point): each grant records the epoch, and
 *   only a refusal of a call granted in the current epoch cuts; the cut opens a new epoch;
 * - +1 per `width` successes, counted only while the pod is actually used, never above the ceiling;
 * - after a breaker closes: slow start from the floor, +1 per success (doubling per round trip)
 *   up to the last cut value, then linear again.
 */

import { DEFAULTS } from "./defaults.js";

/** What an algorithm decided about a congestion signal. */
export type CongestionVerdict =
  /** The first signal of a new event: the width was cut. */
  | "cut"
  /** A call from before the last cut: the same event, already answered. */
  | "same_event"
  /**
   * The pod refused again after the cut, before any success at the reduced width, or at its
   * floor: cutting cannot help, so the breaker should count it (DESIGN §1.4).
   */
  | "persistent";

/** Decides a pod's width from outcomes; plain data so a store can share it (toJSON). */
export interface WidthAlgorithm {
  /** Calls the pod may have in flight now. */
  readonly width: number;
  /** The congestion epoch; a grant records it and hands it back with its outcome. */
  readonly epoch: number;
  /**
   * A call succeeded. It was granted in `epoch` with `inflightAtStart` calls on the pod (counting
   * itself) while the width was `widthAtStart`.
   */
  onSuccess(inflightAtStart: number, widthAtStart: number, epoch: number): void;
  /** A call granted in `epoch` was refused with `inflight` calls on the pod (counting itself). */
  onCongestion(epoch: number, inflight: number): CongestionVerdict;
  /** The breaker closed after a trip: restart slowly from the floor. */
  onRecovered(): void;
  /**
   * The pod keeps refusing but may not be isolated (half its lane's pods are open already):
   * hold it at the floor (DESIGN §1.4).
   */
  holdAtFloor(): void;
  toJSON(): WidthState;
}

/** Serializable width state. */
export interface WidthState {
  width: number;
  epoch: number;
  ceiling: number;
  floor: number;
  /** Successes counted toward the next +1. */
  credit: number;
  /** Slow-start target (the last cut value); 0 when not in slow start. */
  ssthresh: number;
  /** A call granted at the current width has succeeded since the last cut. */
  succeededSinceCut: boolean;
  /** Factor of a repeat cut. */
  decrease: number;
  /**
   * In flight at the last refusal: the pod's observed breaking point, 0 when unknown. Growing
   * back to it is cautious (one step per {@link PROBE_RTTS} round trips), so a pod whose true
   * capacity sits just below it is not refused every few round trips.
   */
  breakPoint: number;
}

/**
 * Round trips per +1 when the next step would reach the last breaking point (CUBIC's plateau
 * near W_max, in AIMD's terms). With a small pod (capacity 4), probing every round trip would
 * refuse one call in five.
 */
export const PROBE_RTTS = 8;

/** Options for {@link AimdWidth}. Defaults: `DEFAULTS.adaptive`. */
export interface AimdOptions {
  /** The operator's ceiling (the pod's `maxInflight`): the start and the cap. */
  ceiling: number;
  /** Lowest width a cut can reach. **Default:** 4 (clamped to the ceiling). */
  floor?: number;
  /**
   * Factor of a repeat cut (every cut after the first from the ceiling). **Default:** 0.8.
   * The first cut halves (TCP's ssthresh = FlightSize / 2: the pod's capacity is unknown and
   * seed 000's pods refused at twice what they served); later cuts happen near the pod's real
   * capacity, where halving would idle a quarter of it on average (docs/adaptive.md).
   */
  decrease?: number;
}

export class AimdWidth implements WidthAlgorithm {
  readonly #s: WidthState;

  /** Starts at the ceiling; `floor` and `decrease` come resolved, or from `DEFAULTS.adaptive`. */
  constructor(options: AimdOptions) {
    this.#s = {
      width: options.ceiling,
      epoch: 0,
      ceiling: options.ceiling,
      floor: Math.min(options.floor ?? DEFAULTS.adaptive.floor, options.ceiling),
      credit: 0,
      ssthresh: 0,
      succeededSinceCut: true,
      decrease: options.decrease ?? DEFAULTS.adaptive.decrease,
      breakPoint: 0,
    };
  }

  /**
   * A width that continues from `state` (a {@link toJSON} result, e.g. read back from a store): it
   * answers every later call exactly as the saved one would have.
   *
   * @throws TypeError when `state` is not a consistent width state.
   */
  static fromJSON(state: WidthState): AimdWidth {
    const width = new AimdWidth({ ceiling: 1 });
    Object.assign(width.#s, checkState(state));
    return width;
  }

  get width(): number {
    return this.#s.width;
  }

  get epoch(): number {
    return this.#s.epoch;
  }

  get floor(): number {
    return this.#s.floor;
  }

  get ceiling(): number {
    return this.#s.ceiling;
  }

  onSuccess(inflightAtStart: number, widthAtStart: number, epoch: number): void {
    const s = this.#s;
    // Only a call granted after the last cut proves the reduced width works; a drowning pod still
    // finishing older calls must not look healthy (its next refusal should reach the breaker).
    if (epoch === s.epoch) s.succeededSinceCut = true;
    // Only a pod that was actually used shows whether more would fit; idle successes prove nothing.
    // Compared with the width at grant: in slow start the width has grown since.
    if (s.width >= s.ceiling || inflightAtStart < widthAtStart - 1) return;
    if (s.ssthresh > 0 && s.width < s.ssthresh) {
      s.width++; // slow start: +1 per success doubles the width each round trip
      if (s.width >= s.ssthresh) s.ssthresh = 0;
      return;
    }
    // A success at or above the old breaking point: the pod carries more now.
    if (s.breakPoint > 0 && inflightAtStart >= s.breakPoint) s.breakPoint = 0;
    s.credit++;
    const probing = s.breakPoint > 0 && s.width + 1 >= s.breakPoint;
    if (s.credit >= (probing ? s.width * PROBE_RTTS : s.width)) {
      s.credit = 0;
      s.width++;
    }
  }

  onCongestion(epoch: number, inflight: number): CongestionVerdict {
    const s = this.#s;
    if (epoch < s.epoch) return "same_event";
    if (!s.succeededSinceCut || s.width <= s.floor) return "persistent";
    const factor = s.width >= s.ceiling ? 0.5 : s.decrease;
    s.breakPoint = inflight;
    s.width = Math.max(s.floor, Math.min(s.width - 1, Math.floor(inflight * factor)));
    s.epoch++;
    s.credit = 0;
    s.ssthresh = 0;
    s.succeededSinceCut = false;
    return "cut";
  }

  holdAtFloor(): void {
    const s = this.#s;
    if (s.width === s.floor) return;
    // Remember where it was, so recovery climbs back quickly (slow start up to it).
    s.ssthresh = Math.max(s.ssthresh, s.width);
    s.width = s.floor;
    s.epoch++;
    s.credit = 0;
    s.succeededSinceCut = false;
  }

  onRecovered(): void {
    const s = this.#s;
    s.ssthresh = Math.max(s.ssthresh, s.width, s.floor);
    s.width = s.floor;
    s.credit = 0;
    s.epoch++;
    s.succeededSinceCut = true;
    if (s.ssthresh <= s.width) s.ssthresh = 0;
  }

  /** A copy of the state (plain JSON). */
  toJSON(): WidthState {
    return { ...this.#s };
  }
}

/** A copy of `s` when it is a consistent {@link WidthState}. */
function checkState(s: WidthState): WidthState {
  const bad = (field: string, value: unknown): never => {
    throw new TypeError(`width state: ${field} is invalid (${JSON.stringify(value)})`);
  };
  const count = (field: keyof WidthState, min: number): number => {
    const v = s?.[field];
    return typeof v === "number" && Number.isSafeInteger(v) && v >= min ? v : bad(field, v);
  };
  const ceiling = count("ceiling", 1);
  const floor = count("floor", 1);
  if (floor > ceiling) bad("floor", floor);
  const width = count("width", floor);
  if (width > ceiling) bad("width", width);
  if (typeof s.succeededSinceCut !== "boolean") bad("succeededSinceCut", s.succeededSinceCut);
  if (!(typeof s.decrease === "number" && s.decrease > 0 && s.decrease <= 1)) bad("decrease", s.decrease);
  return {
    width,
    epoch: count("epoch", 0),
    ceiling,
    floor,
    credit: count("credit", 0),
    ssthresh: count("ssthresh", 0),
    succeededSinceCut: s.succeededSinceCut,
    decrease: s.decrease,
    breakPoint: count("breakPoint", 0),
  };
}

/** A width that never moves: for tests, and for `adaptive: false`. */
export class FixedWidth implements WidthAlgorithm {
  constructor(readonly width: number) {}

  static of(width: number): FixedWidth {
    return new FixedWidth(width);
  }

  readonly epoch = 0;

  onSuccess(): void {}

  onCongestion(): CongestionVerdict {
    return "persistent";
  }

  onRecovered(): void {}

  holdAtFloor(): void {}

  toJSON(): WidthState {
    const w = this.width;
    return {
      width: w,
      epoch: 0,
      ceiling: w,
      floor: w,
      credit: 0,
      ssthresh: 0,
      succeededSinceCut: true,
      decrease: 1,
      breakPoint: 0,
    };
  }
}
