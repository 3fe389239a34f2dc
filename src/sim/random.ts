/**
 * Deterministic randomness for the simulator. Nothing here reads `Math.random`: a run with the
 * same seed and the same arrival order draws the same service times, and response text depends
 * only on the request, so tests and the load runner can compare bytes.
 */

/** mulberry32: a 32-bit generator, small and good enough for jitter (not for cryptography). */
export class Mulberry32 {
  #state: number;

  /** Starts the sequence at `seed` (any integer; only its low 32 bits matter). */
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** Next draw, uniform in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) | 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /**
   * A lognormal factor with median `exp(−σ²/2)` and mean 1, so `base · factor` keeps `base` as its
   * mean. Box–Muller turns two uniforms into one standard normal z.
   */
  lognormalFactor(sigma: number): number {
    if (sigma === 0) return 1;
    const u1 = 1 - this.next(); // (0, 1]: log(0) would be −∞
    const u2 = this.next();
    const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
    return Math.exp(sigma * z - (sigma * sigma) / 2);
  }
}

/** FNV-1a over the UTF-16 code units of `text`, continuing from `hash`: a stable 32-bit key. */
export function fnv1a(text: string, hash = 0x811c9dc5): number {
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** Murmur3's finalizer: spreads the bits of `x` so consecutive inputs give unrelated outputs. */
export function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}
