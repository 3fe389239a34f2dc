/**
 * A lane with `limit: 0` is a pass-through (DESIGN §2): no waiting, no counting, one branch of
 * overhead. Its lease is created once per lane and shared; every ending is a no-op.
 */
import type { Lease } from "../core/lease.js";

export function passThroughLease(lane: string): Lease {
  const done = () => {};
  return Object.freeze({
    lane,
    pod: undefined,
    priority: "default" as const,
    queuedMs: 0,
    attempts: 1,
    succeeded: done,
    failed: done,
    release: done,
    retry: () => Promise.resolve(false),
    [Symbol.dispose]: done,
    [Symbol.asyncDispose]: () => Promise.resolve(),
  });
}
