/**
 * DESIGN §1 invariants over random interleavings, three lanes sharing one group (no pods):
 * acquire (any class, with or without a key and an AbortSignal), abort, every lease ending
 * (sometimes twice), endings of already-ended leases, and clock advances. Checks in
 * invariants.ts run after every step and again after a full drain.
 */
import { describe, test } from "node:test";
import fc from "fast-check";
import { opArb, runOps, runs } from "./arbitraries.js";
import type { Setup } from "./model.js";

const base: Setup = {
  lanes: [
    { name: "A", limit: 3, reserve: 1 },
    { name: "B", limit: 2, reserve: 1 },
    { name: "C", limit: 4, reserve: 1 },
  ],
  groupLimit: 5,
  queueLimit: 4,
  queueTimeoutMs: 1000,
  agingMs: 500,
  floor: 1,
  baseCooldownMs: 100,
  maxCooldownMs: 800,
};

describe("scheduler invariants: three lanes sharing one group", () => {
  test("hold after every step of a random interleaving, and nothing is left after a drain", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb(3, false), { minLength: 1, maxLength: 60, size: "max" }),
        async (ops) => {
          await runOps(base, ops);
        },
      ),
      runs(300),
    );
  });

  test("hold for other reserves, group limits, queue bounds and timeouts", async () => {
    const setup = fc.record({
      reserves: fc.tuple(fc.nat(2), fc.nat(2), fc.nat(2)),
      // Lanes with different timeouts make a later arrival's deadline the earliest one.
      timeouts: fc.tuple(...base.lanes.map(() => fc.integer({ min: 100, max: 1500 }))),
      groupLimit: fc.integer({ min: 1, max: 9 }),
      queueLimit: fc.integer({ min: 1, max: 6 }),
      agingMs: fc.integer({ min: 50, max: 1000 }),
    });
    await fc.assert(
      fc.asyncProperty(setup, fc.array(opArb(3, false), { maxLength: 100, size: "max" }), async (s, ops) => {
        await runOps(
          {
            ...base,
            lanes: base.lanes.map((l, i) => ({
              ...l,
              reserve: s.reserves[i]!,
              queueTimeoutMs: s.timeouts[i]!,
            })),
            groupLimit: s.groupLimit,
            queueLimit: s.queueLimit,
            agingMs: s.agingMs,
          },
          ops,
        );
      }),
      runs(200),
    );
  });

  test("hold under a long run that keeps the queues full", async () => {
    // Arrivals outnumber endings five to one, so shedding, timeouts and aging all happen.
    const busy = fc.array(opArb(3, false), { minLength: 150, maxLength: 250, size: "max" });
    await fc.assert(
      fc.asyncProperty(busy, async (ops) => {
        await runOps(base, ops);
      }),
      runs(30),
    );
  });
});
