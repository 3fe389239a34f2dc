/**
 * The chaos run's only source of randomness: one seeded generator, so a failing run replays from
 * its seed (CHAOS_SEED). Traffic and faults draw from their own streams (`fork`), so a change in
 * how many calls one run made does not shift which faults the next replay draws.
 */
import { Mulberry32 } from "../../src/sim/random.js";

export class Rng {
  readonly #gen: Mulberry32;

  constructor(readonly seed: number) {
    this.#gen = new Mulberry32(seed);
  }

  /** A generator of its own, derived from this seed and `salt`. */
  fork(salt: number): Rng {
    return new Rng((this.seed ^ Math.imul(salt + 1, 0x9e3779b1)) >>> 0);
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.#gen.next();
  }

  /** Uniform in [lo, hi). */
  between(lo: number, hi: number): number {
    return lo + (hi - lo) * this.#gen.next();
  }

  /** An integer in [lo, hi], both included. */
  int(lo: number, hi: number): number {
    return lo + Math.floor((hi - lo + 1) * this.#gen.next());
  }

  chance(p: number): boolean {
    return this.#gen.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(items.length * this.#gen.next())]!;
  }

  /** A new array with `items` in a random order (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor((i + 1) * this.#gen.next());
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }
}

/** The seed to use: CHAOS_SEED when set (a replay), else a fresh one. */
export function chaosSeed(): number {
  const env = process.env.CHAOS_SEED;
  if (env !== undefined && env !== "") {
    const n = Number(env);
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff)
      throw new Error(`CHAOS_SEED must be an integer 0–4294967295, got "${env}"`);
    return n;
  }
  return Math.floor(Math.random() * 0xffffffff) >>> 0;
}
