/**
 * Wait-time quantiles over the last five minutes in bounded memory (no list of every wait):
 * five one-minute slices of log-spaced bucket counts. A quantile is read from the merged counts
 * and is accurate to one bucket (≈ 12 %), which is what an operator's p50/p90 needs.
 */

const SLICE_MS = 60_000;
const SLICES = 5;
// Bucket 0 holds waits below 1 ms; bucket i ≥ 1 holds [GROWTH^(i-1), GROWTH^i) ms, up to ~2 h.
const GROWTH = 1.25;
const LOG_GROWTH = Math.log(GROWTH);
const BUCKETS = 72;

function bucketOf(ms: number): number {
  if (ms < 1) return 0;
  const i = 1 + Math.floor(Math.log(ms) / LOG_GROWTH);
  return i < BUCKETS ? i : BUCKETS - 1;
}

/** Upper bound in ms of bucket `i`, the value a quantile in it reports. */
function upperOf(i: number): number {
  return i === 0 ? 0 : GROWTH ** i;
}

export class WindowHistogram {
  readonly #counts = new Uint32Array(SLICES * BUCKETS);
  readonly #events = new Uint32Array(SLICES);
  readonly #sliceStart = new Float64Array(SLICES).fill(Number.NEGATIVE_INFINITY);
  /**
   * The slice last written and the minute it covers: nearly every record falls in it, and
   * checking that is two comparisons where finding the slice is a division and two modulos
   * (recorded on every grant, the uncontended ones included).
   */
  #curSlot = 0;
  #curStart = Number.POSITIVE_INFINITY;
  #curEnd = Number.NEGATIVE_INFINITY;

  #slice(nowMs: number): number {
    if (nowMs >= this.#curStart && nowMs < this.#curEnd) return this.#curSlot;
    const index = Math.floor(nowMs / SLICE_MS);
    const slot = ((index % SLICES) + SLICES) % SLICES;
    const start = index * SLICE_MS;
    if (this.#sliceStart[slot] !== start) {
      this.#sliceStart[slot] = start;
      this.#counts.fill(0, slot * BUCKETS, slot * BUCKETS + BUCKETS);
      this.#events[slot] = 0;
    }
    this.#curSlot = slot;
    this.#curStart = start;
    this.#curEnd = start + SLICE_MS;
    return slot;
  }

  #live(slot: number, nowMs: number): boolean {
    return nowMs - this.#sliceStart[slot]! < SLICES * SLICE_MS;
  }

  /** Records one wait of `ms`. */
  record(ms: number, nowMs: number): void {
    // The current minute's check written out here: this runs on every grant.
    const slot = nowMs >= this.#curStart && nowMs < this.#curEnd ? this.#curSlot : this.#slice(nowMs);
    this.#counts[slot * BUCKETS + (ms < 1 ? 0 : bucketOf(ms))]!++;
  }

  /** Counts one event (a queue timeout) in the window. */
  count(nowMs: number): void {
    this.#events[this.#slice(nowMs)]!++;
  }

  /** Events counted in the last five minutes. */
  events(nowMs: number): number {
    let total = 0;
    for (let s = 0; s < SLICES; s++) if (this.#live(s, nowMs)) total += this.#events[s]!;
    return total;
  }

  /** The `q`-quantile (0..1) of recorded waits in ms over the last five minutes; 0 when empty. */
  quantile(q: number, nowMs: number): number {
    const merged = new Float64Array(BUCKETS);
    let total = 0;
    for (let s = 0; s < SLICES; s++) {
      if (!this.#live(s, nowMs)) continue;
      for (let b = 0; b < BUCKETS; b++) {
        const c = this.#counts[s * BUCKETS + b]!;
        merged[b]! += c;
        total += c;
      }
    }
    if (total === 0) return 0;
    const rank = Math.ceil(q * total);
    let seen = 0;
    for (let b = 0; b < BUCKETS; b++) {
      seen += merged[b]!;
      if (seen >= rank) return upperOf(b);
    }
    return upperOf(BUCKETS - 1);
  }
}
