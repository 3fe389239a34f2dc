/**
 * The store contract (STYLE G15): what every store must do, written once and run against each
 * store (`describeStore(name, makeStore)`). Today the memory store; the Redis store of fleet mode
 * runs the same suite.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { Budget } from "../../src/core/budget.js";
import { Path } from "../../src/core/path.js";
import { BULK, INTERACTIVE, type Rank } from "../../src/core/priority.js";
import type { Store } from "../../src/store/store.js";

export function describeStore(name: string, makeStore: () => Store | Promise<Store>): void {
  describe(`store contract: ${name}`, () => {
    test("a key names one budget: asking again (a pod or group listed by two lanes) returns the same one", async () => {
      const store = await makeStore();
      const a = store.concurrency("group:gb10", 4, 0, "gb10");
      const b = store.concurrency("group:gb10", 4, 0, "gb10");
      assert.equal(a, b);
      assert.equal(a.name, "gb10");
      assert.notEqual(store.concurrency("lane:gb10", 4), a, "keys of different kinds are different budgets");
      assert.equal(store.arrival("key:team", 3), store.arrival("key:team", 3));
    });

    test("take is all or nothing: one full budget on the path leaves every other count unchanged", async () => {
      const store = await makeStore();
      const lane = store.concurrency("lane:chat", 2);
      const group = store.concurrency("group:g", 1);
      const path = new Path("chat", [lane, group], 2, null);
      assert.equal(store.take(path, BULK, 1, 0), true);
      assert.deepEqual([lane.inflight, group.inflight], [1, 1]);
      assert.equal(store.take(path, BULK, 1, 0), false, "the group is full");
      assert.deepEqual([lane.inflight, group.inflight], [1, 1], "the lane was not taken alone");
      store.give(path, 1, 0);
      assert.deepEqual([lane.inflight, group.inflight], [0, 0]);
    });

    test("the reserve: the last slots of a lane go only to interactive calls", async () => {
      const store = await makeStore();
      const lane = store.concurrency("lane:chat", 2, 1);
      const path = new Path("chat", [lane], 1, null);
      assert.equal(store.take(path, BULK, 1, 0), true);
      assert.equal(store.take(path, BULK, 1, 0), false, "the reserved slot is not for bulk");
      assert.equal(store.take(path, INTERACTIVE, 1, 0), true);
      assert.equal(lane.inflight, 2);
    });

    test("from an index, take and give touch only the path's tail (a re-dispatch moves pods, keeping the lane slot)", async () => {
      const store = await makeStore();
      const lane = store.concurrency("lane:chat", 1);
      const podA = store.concurrency("pod:a", 1);
      const podB = store.concurrency("pod:b", 1);
      const viaA = new Path("chat", [lane, podA], 1, null);
      const viaB = new Path("chat", [lane, podB], 1, null);
      assert.equal(store.take(viaA, BULK, 1, 0), true);
      store.give(viaA, 1, 0, viaA.podStart);
      assert.equal(store.take(viaB, BULK, 1, 0, viaB.podStart), true, "the full lane is not asked again");
      assert.deepEqual([lane.inflight, podA.inflight, podB.inflight], [1, 0, 1]);
    });

    test("giving back more than was taken never drives a count below zero (never adds capacity)", async () => {
      const store = await makeStore();
      const lane = store.concurrency("lane:chat", 1);
      const path = new Path("chat", [lane], 1, null);
      store.give(path, 1, 0);
      assert.equal(lane.inflight, 0);
      assert.equal(store.take(path, BULK, 1, 0), true);
      assert.equal(store.take(path, BULK, 1, 0), false);
    });

    test("an arrival budget counts in flight plus queued and caps the class it admits", async () => {
      const store = await makeStore();
      const key = store.arrival("key:team", 2, BULK, "team");
      assert.equal(key.full, false);
      key.queued = 1;
      key.inflight = 1;
      assert.equal(key.full, true);
      assert.equal(key.cap(INTERACTIVE), BULK);
      assert.equal(store.arrival("key:any", 2).cap(INTERACTIVE), INTERACTIVE);
    });

    test("under random takes and gives over overlapping paths no budget exceeds its limit and counts match what is held", async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              op: fc.constantFrom("take", "give"),
              path: fc.nat(3),
              rank: fc.constantFrom<Rank>(0, 1, 2),
            }),
            {
              maxLength: 80,
            },
          ),
          async (ops) => {
            const store = await makeStore();
            const laneA = store.concurrency("lane:a", 3, 1);
            const laneB = store.concurrency("lane:b", 2);
            const group = store.concurrency("group:shared", 4);
            const pod = store.concurrency("pod:p", 2);
            const paths = [
              new Path("a", [laneA, group], 2, null),
              new Path("a", [laneA, group, pod], 2, null),
              new Path("b", [laneB, group], 2, null),
              new Path("b", [laneB, group, pod], 2, null),
            ];
            const held = [0, 0, 0, 0];
            for (const { op, path, rank } of ops) {
              if (op === "take") {
                if (store.take(paths[path]!, rank, 1, 0)) held[path]!++;
              } else if (held[path]! > 0) {
                store.give(paths[path]!, 1, 0);
                held[path]!--;
              }
              const expected = new Map<Budget, number>();
              paths.forEach((p, i) => {
                for (const b of p.budgets) expected.set(b, (expected.get(b) ?? 0) + held[i]!);
              });
              for (const b of [laneA, laneB, group, pod]) {
                assert.equal(b.inflight, expected.get(b) ?? 0, `${b.name} counts what is held`);
                assert.ok(b.inflight <= b.limit, `${b.name} within its limit`);
              }
            }
          },
        ),
        { numRuns: 200 },
      );
    });
  });
}
