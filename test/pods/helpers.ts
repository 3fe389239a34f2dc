/**
 * Shared helpers for the pod tests: a Governor on a ManualClock, and ways to drive it without
 * sleeping (grants settle on the microtask queue; test/helpers's `flush` drains it).
 */
import { ManualClock } from "../../src/core/clock.js";
import type { Lease } from "../../src/core/lease.js";
import type { LaneOptions, PodOptions } from "../../src/core/options.js";
import type { PodSnapshot } from "../../src/core/snapshot.js";
import { Governor } from "../../src/governor/governor.js";
import { flush } from "../helpers/index.js";

export const LANE = "ocr";

/** `n` pods named p0, p1, … with the given ceiling. */
export function pods(n: number, maxInflight: number): PodOptions[] {
  return Array.from({ length: n }, (_, i) => ({ id: `p${i}`, maxInflight }));
}

export interface Rig {
  gov: Governor;
  clock: ManualClock;
  /** The snapshot entry of pod `id`. */
  pod(id: string): PodSnapshot;
}

/** A Governor with one lane "ocr" on a ManualClock; jitter off (random 0.5 → ×1.0). */
export function rig(lane: LaneOptions, random: () => number = () => 0.5): Rig {
  const clock = new ManualClock(0);
  const gov = new Governor({ clock, random, lanes: { [LANE]: { queueTimeoutMs: 600_000, ...lane } } });
  return {
    gov,
    clock,
    pod(id) {
      const p = gov.snapshot().pods.find((x) => x.id === id);
      if (p === undefined) throw new Error(`no pod ${id}`);
      return p;
    },
  };
}

/** Acquires `n` leases that are granted at once (throws if one has to wait). */
export async function acquireNow(gov: Governor, n: number, lane = LANE): Promise<Lease[]> {
  const out: Lease[] = [];
  for (let i = 0; i < n; i++) {
    const w = watch(gov.acquire(lane));
    await flush();
    if (w.lease === undefined) throw new Error(`acquire ${i + 1} of ${n} was not granted at once`);
    out.push(w.lease);
  }
  return out;
}

/** A pending acquire whose outcome can be read synchronously after a flush. */
export interface Watched {
  lease: Lease | undefined;
  error: unknown;
  promise: Promise<Lease>;
}

export function watch(promise: Promise<Lease>): Watched {
  const w: Watched = { lease: undefined, error: undefined, promise };
  promise.then(
    (l) => {
      w.lease = l;
    },
    (e) => {
      w.error = e;
    },
  );
  return w;
}

/** Resolves after `ms` of simulated time (a timer on the ManualClock). */
export function sleep(clock: ManualClock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimer(clock.now() + ms, resolve));
}

/** Moves the clock in steps of `stepMs`, flushing after each, until `done()` or `maxMs` passes. */
export async function runUntil(
  clock: ManualClock,
  done: () => boolean,
  stepMs = 10,
  maxMs = 600_000,
): Promise<void> {
  const end = clock.now() + maxMs;
  await flush();
  while (!done()) {
    if (clock.now() >= end) throw new Error(`not done after ${maxMs} ms of simulated time`);
    clock.advance(stepMs);
    await flush();
  }
}
