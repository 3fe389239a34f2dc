/**
 * DESIGN §1 invariants with one lane served by 1–3 pods (adaptive width, floor 1 or 2, breaker
 * with a 100 ms base cooldown) next to two plain lanes, all in one group. On top of the
 * scheduler ops, leases end with 503s, refusals, socket errors and quota 429s, and pod-lane
 * leases are re-dispatched with `lease.retry()`.
 */
import { describe, test } from "node:test";
import fc from "fast-check";
import { opArb, runOps, runs } from "./arbitraries.js";
import type { Setup } from "./model.js";

const setupArb: fc.Arbitrary<Setup> = fc
  .record({
    ceilings: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }),
    floor: fc.integer({ min: 1, max: 2 }),
    podLaneLimit: fc.integer({ min: 2, max: 6 }),
    reserve: fc.nat(1),
    groupLimit: fc.integer({ min: 4, max: 7 }),
  })
  .map((r) => ({
    lanes: [
      { name: "A", limit: 3, reserve: 1 },
      { name: "B", limit: 2, reserve: 1 },
      {
        name: "P",
        limit: r.podLaneLimit,
        reserve: r.reserve,
        pods: r.ceilings.map((maxInflight, i) => ({ id: `http://pod-${i}:8000`, maxInflight })),
      },
    ],
    groupLimit: r.groupLimit,
    queueLimit: 4,
    queueTimeoutMs: 1000,
    agingMs: 500,
    floor: r.floor,
    baseCooldownMs: 100,
    maxCooldownMs: 800,
  }));

describe("scheduler invariants: a lane served by pods", () => {
  test("hold after every step with refusals, overloads, quota pauses and re-dispatches", async () => {
    await fc.assert(
      fc.asyncProperty(
        setupArb,
        fc.array(opArb(3, true), { minLength: 1, maxLength: 80, size: "max" }),
        async (setup, ops) => {
          await runOps(setup, ops);
        },
      ),
      runs(400),
    );
  });

  test("hold when most traffic goes to the pod lane", async () => {
    // Lane index 2 (P) for most arrivals and mostly successful endings: widths are cut and grow
    // back, breakers trip and close, and successes earn re-dispatches (one per ten), which the
    // mixed run reaches less often.
    const podHeavy = opArb(3, true, 18, 1).map((op) =>
      op.t === "acquire" && op.lane !== 2 && op.abortable ? { ...op, lane: 2 } : op,
    );
    await fc.assert(
      fc.asyncProperty(
        setupArb,
        fc.array(podHeavy, { minLength: 50, maxLength: 200, size: "max" }),
        async (setup, ops) => {
          await runOps(setup, ops);
        },
      ),
      runs(100),
    );
  });
});
