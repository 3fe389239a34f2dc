/**
 * Time in sluice's core is an argument, never a global read (STYLE G2): the core asks an
 * injected `Clock`, and tests drive a `ManualClock` instead of sleeping.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale; only differences are meaningful. */
  now(): number;
}

/** The process's monotonic clock (`performance.now()`), immune to wall-clock jumps. */
export const systemClock: Clock = { now: () => performance.now() };

/** A clock that moves only when told to: `advance(ms)` or `set(ms)`. */
export class ManualClock implements Clock {
  #now: number;

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  /** Moves time forward by `ms` (≥ 0) and returns the new time. */
  advance(ms: number): number {
    if (!(ms >= 0)) throw new RangeError(`ManualClock.advance expects ms ≥ 0, got ${ms}`);
    this.#now += ms;
    return this.#now;
  }

  /** Sets the time; it never moves backwards. */
  set(ms: number): void {
    if (ms < this.#now) throw new RangeError(`ManualClock.set cannot go back from ${this.#now} to ${ms}`);
    this.#now = ms;
  }
}
