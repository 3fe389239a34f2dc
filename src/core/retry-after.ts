/**
 * How long a refused caller should wait, from the lane's measured drain rate (DESIGN §3.2).
 *
 * Little's law, L = λW: with `width` calls in flight, each held for a mean of `holdMs`, the
 * lane completes λ = width / holdMs calls per ms. A caller at `position` in line expects to
 * wait position / λ. Until a lease has ended there is no measurement, and the answer is the
 * 1 s minimum.
 */

/** Floor for Retry-After: HTTP's header is whole seconds, and 0 invites a hot loop. */
export const MIN_RETRY_AFTER_MS = 1000;

/**
 * A wait as a refusal's Retry-After: whole ms, never below {@link MIN_RETRY_AFTER_MS}. The one
 * place the floor is applied; every refusal's number goes through it.
 */
export function retryAfterFloor(ms: number): number {
  return Math.max(MIN_RETRY_AFTER_MS, Math.ceil(ms));
}

/** Smoothed mean of how long leases are held; the drain-rate measurement. */
export class HoldTime {
  /**
   * The mean, in a field that only ever holds numbers: V8 keeps such a field as an unboxed
   * double, where a field that starts `undefined` stores every fractional mean as a new heap
   * number (one allocation per release, recorded on every lease's end).
   */
  #mean = 0;
  samples = 0;

  /** Mean hold in ms, `undefined` before the first sample. */
  get meanMs(): number | undefined {
    return this.samples === 0 ? undefined : this.#mean;
  }

  /** Folds in one lease's hold time (EWMA, α = 0.1: about the last ten releases dominate). */
  record(ms: number): void {
    this.#mean = this.samples === 0 ? ms : this.#mean + 0.1 * (ms - this.#mean);
    this.samples++;
  }
}

/** Expected ms until `position` waiters ahead have drained through `width` slots; undefined if unmeasured. */
export function expectedWaitMs(position: number, width: number, hold: HoldTime): number | undefined {
  if (hold.meanMs === undefined || width <= 0) return undefined;
  return (position * hold.meanMs) / width;
}

/** Retry-After in ms for a caller refused at `position`: the expected wait, at least 1 s. */
export function retryAfterMs(position: number, width: number, hold: HoldTime): number {
  return retryAfterFloor(expectedWaitMs(position, width, hold) ?? MIN_RETRY_AFTER_MS);
}
