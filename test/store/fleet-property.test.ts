/**
 * The fleet invariants as a property over real Redis: two Governors (two replicas) with their own
 * RedisStores on one prefix, random acquires on two lanes that share a pod and a group, random
 * releases and aborts. After every step, the leases both replicas hold together never exceed any
 * budget (lane, pod, group); at the end, with everything released, every waiter was granted (no
 * lost wake-up across replicas) and Redis holds no count (no residue). Leases of 5 minutes keep
 * the heartbeat (every 100 s) out of the run: a waiter is woken by a release or not at all.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { Lease } from "../../src/core/lease.js";
import type { GovernorOptions } from "../../src/core/options.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const LIMITS = { a: 2, b: 2, pod: 3, group: 3 };
const options: GovernorOptions = {
  groups: { g: { limit: LIMITS.group } },
  lanes: {
    a: {
      limit: LIMITS.a,
      reserve: 0,
      queueLimit: 50,
      queueTimeoutMs: 60_000,
      group: "g",
      pods: [{ id: "p", maxInflight: LIMITS.pod }],
      adaptive: false,
    },
    b: {
      limit: LIMITS.b,
      reserve: 0,
      queueLimit: 50,
      queueTimeoutMs: 60_000,
      group: "g",
      pods: [{ id: "p", maxInflight: LIMITS.pod }],
      adaptive: false,
    },
  },
};

type Op =
  | { t: "acquire"; replica: 0 | 1; lane: "a" | "b" }
  | { t: "release"; pick: number }
  | { t: "abort"; pick: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant("acquire" as const),
      replica: fc.constantFrom(0 as const, 1 as const),
      lane: fc.constantFrom("a" as const, "b" as const),
    }),
  },
  { weight: 4, arbitrary: fc.record({ t: fc.constant("release" as const), pick: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("abort" as const), pick: fc.nat(20) }) },
);

const settle = () => new Promise((r) => setTimeout(r, 15));
const LEASE_TTL_MS = 300_000;
/**
 * How long the waiters may take to be granted once everything is released: a bound against a
 * hang (a lost wake-up waits for the heartbeat, 100 s away), generous for a loaded 2-core machine
 * (they take a few round trips, ~50 ms idle).
 */
const WAKE_BOUND_MS = 30_000;

describe("fleet invariants (property, real Redis)", () => {
  test("two replicas never hold more than a budget together; no lost wake-up, no residue", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    t.after(() => redis.disconnect()); // a failed property too: an open client keeps the file's process alive
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 40 }), async (ops) => {
        const prefix = uniquePrefix();
        const stores = [0, 1].map(
          (i) => new RedisStore({ url: REDIS_URL, prefix, replica: `r${i}`, leaseTtlMs: LEASE_TTL_MS }),
        );
        await Promise.all(stores.map((s) => s.start()));
        const govs = stores.map((store) => new Governor({ ...options, store }));
        const held: { lease: Lease; lane: string }[] = [];
        const waiting: { done: Promise<void>; abort: AbortController; settled: boolean }[] = [];
        try {
          for (const op of ops) {
            if (op.t === "acquire") {
              const abort = new AbortController();
              const w = { done: Promise.resolve(), abort, settled: false };
              w.done = govs[op.replica]!.acquire(op.lane, { signal: abort.signal }).then(
                (lease) => {
                  held.push({ lease, lane: op.lane });
                  w.settled = true;
                },
                () => {
                  w.settled = true;
                },
              );
              waiting.push(w);
            } else if (op.t === "release" && held.length > 0) {
              held.splice(op.pick % held.length, 1)[0]!.lease.release();
            } else if (op.t === "abort") {
              const open = waiting.filter((w) => !w.settled);
              if (open.length > 0) open[op.pick % open.length]!.abort.abort(new Error("aborted"));
            }
            await settle();
            const byLane = (l: string) => held.filter((h) => h.lane === l).length;
            assert.ok(byLane("a") <= LIMITS.a, `lane a: ${byLane("a")} held across replicas`);
            assert.ok(byLane("b") <= LIMITS.b, `lane b: ${byLane("b")} held across replicas`);
            assert.ok(held.length <= Math.min(LIMITS.pod, LIMITS.group), `pod/group: ${held.length} held`);
          }
          // Release everything, and each waiter as it is granted: every one must be woken.
          let timer: NodeJS.Timeout | undefined;
          let late = false;
          const bound = new Promise<void>((r) => {
            timer = setTimeout(() => {
              late = true;
              r();
            }, WAKE_BOUND_MS);
          });
          try {
            for (;;) {
              for (const h of held.splice(0)) h.lease.release();
              const open = waiting.filter((w) => !w.settled);
              if (open.length === 0 || late) break;
              await Promise.race([...open.map((w) => w.done), bound]);
            }
          } finally {
            clearTimeout(timer);
          }
          const open = waiting.filter((w) => !w.settled).length;
          assert.equal(
            open,
            0,
            `every waiter was granted or aborted (no lost wake-up): ${open} still waiting`,
          );
          await Promise.all(stores.map((s) => s.heartbeat()));
          const keys = (await redis.keys(`{${prefix}}:b:*`)).sort();
          const counts = await Promise.all(keys.map((k) => redis.hgetall(k)));
          assert.deepEqual(
            counts.filter((c) => Object.keys(c).length > 0),
            [],
            "no count left in Redis",
          );
        } finally {
          // A failed run too: nothing of it may outlive the run (waiters, leases, timers, connections).
          for (const w of waiting) w.abort.abort(new Error("the run ended"));
          for (const h of held.splice(0)) h.lease.release();
          for (const g of govs) g.close();
          await Promise.all(stores.map((s) => s.close()));
          const keys = await redis.keys(`{${prefix}}*`);
          if (keys.length > 0) await redis.del(...keys);
        }
      }),
      { numRuns: 12 },
    );
  });
});
