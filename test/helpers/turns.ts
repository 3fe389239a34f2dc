/**
 * Waiting in tests without asserting on time: a turn of the event loop (for code driven by a
 * ManualClock, where grants settle on the microtask queue), a poll with a bound for a hang, and a
 * promise's outcome read without awaiting it.
 */
import { setTimeout as delay } from "node:timers/promises";
import { Mulberry32 } from "../../src/sim/random.js";

export { delay };

/**
 * Lets every promise callback queued so far run, and those they queue: one macrotask turn
 * (`setImmediate` runs after the microtask queue is empty).
 */
export const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * How long a wait may take before it fails: a bound for a hang, generous for a loaded 2-core
 * machine (3 s was not: a full-suite CI-like run saw 30 calls take longer to reach a gateway).
 */
export const WAIT_BOUND_MS = 10_000;

/** Polls `predicate` until true; fails naming `what` after `timeoutMs` (a bound, not an assertion on time). */
export async function waitFor(
  what: string,
  predicate: () => boolean,
  timeoutMs = WAIT_BOUND_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(2);
  }
}

/** Tracks whether a promise has settled, without waiting for it. */
export function track<T>(promise: Promise<T>): { readonly settled: boolean; readonly value: T | undefined } {
  const state: { settled: boolean; value: T | undefined } = { settled: false, value: undefined };
  promise.then(
    (value) => {
      state.settled = true;
      state.value = value;
    },
    () => {
      state.settled = true;
    },
  );
  return state;
}

/** A seeded PRNG with values in [0, 1): the simulator's mulberry32, the same draws for the same seed. */
export function prng(seed: number): () => number {
  const generator = new Mulberry32(seed);
  return () => generator.next();
}
