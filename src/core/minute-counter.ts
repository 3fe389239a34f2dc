/**
 * A sum over the last minute in fixed memory: 60 one-second slots in a ring, each stamped with
 * the second it counts, so a slot from a minute ago is recognized as stale and never summed.
 * What the snapshot's "tokens used this minute" and "throttled answers per minute" read (seed 004:
 * the signals to watch); measurements only, never a budget's state.
 */
const SLOTS = 60;
const SLOT_MS = 1000;

export class MinuteCounter {
  readonly #sums = new Float64Array(SLOTS);
  readonly #seconds = new Float64Array(SLOTS).fill(-1);

  /** Adds `n` (may be negative: a refund) at `nowMs`. */
  add(n: number, nowMs: number): void {
    const second = Math.floor(nowMs / SLOT_MS);
    const i = ((second % SLOTS) + SLOTS) % SLOTS;
    if (this.#seconds[i] !== second) {
      this.#seconds[i] = second;
      this.#sums[i] = 0;
    }
    this.#sums[i]! += n;
  }

  /** The sum over the 60 seconds up to `nowMs` (never below 0). */
  total(nowMs: number): number {
    const second = Math.floor(nowMs / SLOT_MS);
    let sum = 0;
    for (let i = 0; i < SLOTS; i++) {
      const s = this.#seconds[i]!;
      if (s > second - SLOTS && s <= second) sum += this.#sums[i]!;
    }
    return Math.max(0, sum);
  }
}
