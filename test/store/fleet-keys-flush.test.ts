/**
 * A per-key bound across a flush (issue 22 defect 4's FLUSHALL case: "per-key 6 vs 4"). Replica b
 * holds a key's whole bound (4); Redis loses the fleet's keys; replica a notices first and
 * re-registers, and its next arrivals on the key reach a Redis that does not count b's 4 yet.
 * Before, Redis took them (6 on a key bounded at 4, until b's next heartbeat re-registered it).
 * Now a is settling (`redis/shares.ts`): an arrival past its share of the key waits until b is
 * counted again (its roll call makes b re-register at once), and Redis then refuses it with
 * `key_limit`. Counted as leases held on the key, both replicas together.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { KeyLimitError } from "../../src/core/errors.js";
import type { Lease } from "../../src/core/lease.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { closeAndClean, REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const stores: RedisStore[] = [];
const prefixes: string[] = [];
const clients: Array<{ disconnect(): void }> = [];
after(async () => {
  await closeAndClean(stores, prefixes, null);
  for (const c of clients) c.disconnect();
});

describe("a per-key bound across a flush of the fleet's keys (real Redis)", { timeout: 60_000 }, () => {
  test("the replica that re-registers first takes no arrival past its share until the others are counted", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    clients.push(redis);
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const make = async (replica: string) => {
      // A long lease: no heartbeat of its own re-registers b in this test, only the roll call can.
      const store = new RedisStore({ url: REDIS_URL, prefix, replica, leaseTtlMs: 60_000 });
      stores.push(store);
      await store.start();
      const gov = new Governor({
        store,
        lanes: { chat: { limit: 20, reserve: 0, queueLimit: 20, queueTimeoutMs: 30_000 } },
        keys: { team: { maxInflight: 4 } },
      });
      return { store, gov };
    };
    const [a, b] = [await make("a"), await make("b")];
    const held: Lease[] = [];
    for (let i = 0; i < 4; i++) held.push(await b.gov.acquire("chat", { key: "team" }));
    await a.store.heartbeat(); // a hears b's 4 on the key
    const keys = await redis.keys(`{${prefix}}*`);
    await redis.del(...keys); // what a FLUSHALL does to this fleet
    await a.store.heartbeat(); // a notices first: re-registered, settling
    const outcomes = await Promise.all(
      [1, 2].map(() =>
        a.gov.acquire("chat", { key: "team" }).then(
          (lease) => {
            held.push(lease);
            return "granted";
          },
          (error: unknown) => (error instanceof KeyLimitError ? "key_limit" : String(error)),
        ),
      ),
    );
    assert.deepEqual(
      outcomes,
      ["key_limit", "key_limit"],
      `the bound holds: ${held.length} held on a key of 4`,
    );
    assert.equal(held.length, 4);
    const counted = Object.values(await redis.hgetall(`{${prefix}}:b:key:team`)).reduce(
      (s, n) => s + Number(n),
      0,
    );
    assert.equal(counted, 4, "Redis counts b's 4 again");
    for (const l of held) l.release();
  });
});
