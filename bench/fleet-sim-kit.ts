/**
 * The deterministic machinery under the fleet simulation (bench/fleet-sim-lib.ts): a seeded PRNG
 * and its distributions, a manual clock that reports its next timer, and an event heap ordered by
 * (time, insertion order), so a run is a pure function of its scenario.
 */
import { ManualClock } from "../src/core/clock.js";

// ---------------------------------------------------------------------------------------------
// Randomness

/** mulberry32: a small, fast, seeded PRNG with values in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Exponential variate with the given mean. */
export function exponential(random: () => number, mean: number): number {
  return -Math.log(1 - random()) * mean;
}

/** Lognormal variate with the given mean and shape σ (σ = 0 gives the mean exactly). */
export function lognormal(random: () => number, mean: number, sigma: number): number {
  if (sigma === 0) return mean;
  const u1 = 1 - random();
  const u2 = random();
  const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  return mean * Math.exp(sigma * z - (sigma * sigma) / 2);
}

// ---------------------------------------------------------------------------------------------
// Time

/** A ManualClock that also tells when its next timer is due, so the sim can stop there. */
export class SimClock extends ManualClock {
  readonly #due = new Set<{ at: number }>();

  override setTimer(atMs: number, fn: () => void): () => void {
    const rec = { at: atMs };
    this.#due.add(rec);
    const cancel = super.setTimer(atMs, () => {
      this.#due.delete(rec);
      fn();
    });
    return () => {
      this.#due.delete(rec);
      cancel();
    };
  }

  /** When the earliest pending timer is due; Infinity when none. */
  nextTimerAt(): number {
    let at = Number.POSITIVE_INFINITY;
    for (const r of this.#due) if (r.at < at) at = r.at;
    return at;
  }
}

export interface SimEvent {
  at: number;
  seq: number;
  run: () => void;
}

/** Binary min-heap of events by (time, insertion order). */
export class EventHeap {
  readonly #a: SimEvent[] = [];
  #seq = 0;

  get size(): number {
    return this.#a.length;
  }

  peekAt(): number {
    return this.#a.length === 0 ? Number.POSITIVE_INFINITY : this.#a[0]!.at;
  }

  push(at: number, run: () => void): void {
    const a = this.#a;
    const e: SimEvent = { at, seq: this.#seq++, run };
    a.push(e);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(a[i]!, a[p]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }

  pop(): SimEvent | undefined {
    const a = this.#a;
    if (a.length === 0) return undefined;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && less(a[l]!, a[m]!)) m = l;
        if (r < a.length && less(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}

const less = (x: SimEvent, y: SimEvent): boolean => x.at < y.at || (x.at === y.at && x.seq < y.seq);
