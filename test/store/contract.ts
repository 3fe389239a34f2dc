/**
 * The store contract (STYLE G15): what every store must do, written once and run against each
 * store (`describeStore(name, makeStore)`): the memory store, the Redis store on one server and on
 * a Cluster.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { Budget } from "../../src/core/budget.js";
import { Path } from "../../src/core/path.js";
import { BULK, INTERACTIVE, type Rank } from "../../src/core/priority.js";
import type { Store } from "../../src/core/store.js";

export interface ContractOptions {
  /**
   * Whether the store holds per-key bounds (`arrival` with a limit); a store that refuses them
   * as not built skips those checks, saying so. Both stores hold them today.
   */
  perKeyBounds?: boolean;
  /**
   * Runs of each property check. **Default:** 200. Each run makes a fresh store; a Redis store
   * opens two connections and registers a replica for it, so its runs are fewer.
   */
  propertyRuns?: number;
}

export function describeStore(
  name: string,
  makeStore: () => Store | Promise<Store>,
  { perKeyBounds = true, propertyRuns = 200 }: ContractOptions = {},
): void {
  const perKey = perKeyBounds ? {} : { skip: "per-key bounds are not built for this store" };
  describe(`store contract: ${name}`, () => {
    test("a key names one budget: asking again (a pod or group listed by two lanes) returns the same one", async () => {
      const store = await makeStore();
      const a = store.concurrency("group:gb10", 4, 0, "gb10");
      const b = store.concurrency("group:gb10", 4, 0, "gb10");
      assert.equal(a, b);
      assert.equal(a.name, "gb10");
      assert.notEqual(store.concurrency("lane:gb10", 4), a, "keys of different kinds are different budgets");
    });

    test("a key's arrival budget is one budget too", perKey, async () => {
      const store = await makeStore();
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

    test("commit takes every budget of the path (the scheduler's grant, after it found room)", async () => {
      const store = await makeStore();
      const lane = store.concurrency("lane:chat", 2);
      const pod = store.concurrency("pod:p", 1);
      const path = new Path("chat", [lane, pod], 1, null);
      assert.equal(path.hasRoom(BULK, 1, 0), true);
      store.commit(path, 1, 0);
      assert.deepEqual([lane.inflight, pod.inflight], [1, 1]);
      assert.equal(store.take(path, BULK, 1, 0), false, "and the next take sees it");
      store.give(path, 1, 0);
      assert.deepEqual([lane.inflight, pod.inflight], [0, 0]);
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

    test("an arrival budget counts in flight plus queued and caps the class it admits", perKey, async () => {
      const store = await makeStore();
      const key = store.arrival("key:team", 2, BULK, "team");
      assert.equal(key.full, false);
      key.queued = 1;
      key.inflight = 1;
      assert.equal(key.full, true);
      assert.equal(key.cap(INTERACTIVE), BULK);
      assert.equal(store.arrival("key:any", 2).cap(INTERACTIVE), INTERACTIVE);
    });

    test("a rate bucket is made once per key, starts full, and is taken with the rest of the path, all or nothing", async () => {
      const store = await makeStore();
      const tpm = store.rate("tpm:lane:chat", "tokens", 6000, 0, "chat");
      assert.equal(store.rate("tpm:lane:chat", "tokens", 6000, 0, "chat"), tpm);
      assert.notEqual(store.rate("rpm:lane:chat", "requests", 10, 0, "chat"), tpm);
      const lane = store.concurrency("lane:chat", 1);
      const path = new Path("chat", [lane, tpm], 2, null);
      assert.deepEqual(path.metered, [tpm]);
      assert.equal(store.take(path, BULK, 7000, 0), false, "more than the bucket holds");
      assert.deepEqual([lane.inflight, tpm.levelAt(0)], [0, 6000], "the lane was not taken alone");
      assert.equal(store.take(path, BULK, 4000, 0), true);
      assert.deepEqual([lane.inflight, tpm.levelAt(0)], [1, 2000]);
      store.give(path, 4000, 0);
      assert.deepEqual(
        [lane.inflight, tpm.levelAt(0)],
        [0, 2000],
        "give frees the slot, not the reservation",
      );
    });

    test("a rate bucket's interactive reserve: a take of another class leaves it, an interactive take may use it", async () => {
      const store = await makeStore();
      const tpm = store.rate("tpm:lane:kept", "tokens", 6000, 0, "kept");
      tpm.reconfigure(6000, 0, 1000); // what the registry does with a lane's tpmReserve
      const path = new Path("kept", [store.concurrency("lane:kept", 10), tpm], 2, null);
      assert.equal(store.take(path, BULK, 5001, 0), false, "5001 would leave less than the 1000 kept");
      assert.equal(store.take(path, BULK, 5000, 0), true);
      assert.equal(store.take(path, BULK, 1, 0), false, "at the reserve: nothing more for bulk");
      assert.equal(store.take(path, INTERACTIVE, 1000, 0), true, "an interactive call takes the reserve");
      assert.equal(tpm.levelAt(0), 0);
    });

    test("reconcile settles a reservation once: the real usage refunded or charged, null refunded, undefined kept", async () => {
      const store = await makeStore();
      const tpm = store.rate("tpm:lane:a", "tokens", 6000, 0, "a");
      const rpm = store.rate("rpm:lane:a", "requests", 10, 0, "a");
      const path = new Path("a", [tpm, rpm], 2, null);
      const call = (reserved: number, used: number | null | undefined) => {
        assert.equal(store.take(path, BULK, reserved, 0), true);
        store.reconcile(path, reserved, used, 0, 0);
        store.give(path, reserved, 0);
      };
      call(3000, 1000);
      assert.deepEqual([tpm.levelAt(0), rpm.levelAt(0)], [5000, 9]);
      call(1000, null);
      assert.deepEqual([tpm.levelAt(0), rpm.levelAt(0)], [5000, 9], "never reached the provider: all back");
      call(1000, undefined);
      assert.deepEqual([tpm.levelAt(0), rpm.levelAt(0)], [4000, 8], "no usage: the estimate stays");
      call(4000, 7000);
      assert.deepEqual([tpm.levelAt(0), rpm.levelAt(0)], [-3000, 7], "debt carried");
      assert.equal(store.take(path, BULK, 0, 0), false, "nothing fits while in debt");
      assert.equal(store.take(path, BULK, 0, 30_000), true, "until the refill pays it");
    });

    test("an account is made once per key and counts in flight, its buckets and its pause", async () => {
      const store = await makeStore();
      const settings = {
        maxInflight: 1,
        tpm: 1000,
        rpm: undefined,
        tpmReserve: 0,
        rpmReserve: 0,
        adaptive: false as const,
        maxQuotaPauseMs: 5000,
      };
      const account = store.account("account:prod", settings, 0, "prod");
      assert.equal(store.account("account:prod", settings, 0, "prod"), account);
      const path = new Path("chat", [store.concurrency("lane:chat", 5), account], 2, null);
      assert.equal(store.take(path, BULK, 400, 0), true);
      assert.equal(store.take(path, BULK, 400, 0), false, "its one in-flight slot is taken");
      store.reconcile(path, 400, 100, 0, 0);
      store.give(path, 400, 0);
      assert.deepEqual([account.inflight, account.tokens!.levelAt(0)], [0, 900]);
      account.settle(
        { kind: "quota", resetMs: 2000 },
        account.record({ inflightAtStart: 0, widthAtStart: 0, epoch: 0, probe: false }),
        0,
      );
      assert.equal(store.take(path, BULK, 1, 1999), false, "paused until the reset");
      assert.equal(store.take(path, BULK, 1, 2000), true);
    });

    test("under random takes and reconciles a token bucket is never overdrawn by a grant", async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              cost: fc.nat(1500),
              used: fc.option(fc.nat(2000), { nil: undefined }),
              dt: fc.nat(5000),
            }),
            { maxLength: 60 },
          ),
          async (ops) => {
            const store = await makeStore();
            const tpm = store.rate("tpm:lane:p", "tokens", 1000, 0, "p");
            const path = new Path("p", [tpm], 1, null);
            let now = 0;
            for (const { cost, used, dt } of ops) {
              now += dt;
              const before = tpm.levelAt(now);
              if (!store.take(path, BULK, cost, now)) {
                assert.ok(before < cost || cost > 1000, `refused ${cost} with ${before} available`);
                continue;
              }
              assert.ok(before >= cost - 1e-9, `granted ${cost} with only ${before} available`);
              store.reconcile(path, cost, used, now, now);
              assert.ok(tpm.levelAt(now) <= 1000, "never above capacity");
            }
          },
        ),
        { numRuns: propertyRuns },
      );
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
        { numRuns: propertyRuns },
      );
    });
  });
}
