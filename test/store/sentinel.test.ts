/**
 * Fleet mode through Redis Sentinel: `store: redis+sentinel://127.0.0.1:S/sluice-master` asks the
 * Sentinel where the master is and counts there. Two Governors on it share a lane's limit, and
 * the counts are on the master the Sentinel named.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { Redis } from "ioredis";
import type { Lease } from "../../src/core/lease.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis.js";
import { uniquePrefix } from "./redis-helpers.js";
import { missingBinaries, RedisSentinel } from "./topology-helpers.js";

const missing = missingBinaries();
const sentinel = missing === null ? await RedisSentinel.start() : null;
const stores: RedisStore[] = [];
after(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await sentinel?.stop();
});

test("two Governors through a Sentinel share the lane's limit, counted on the master it names", async (t) => {
  if (sentinel === null) return t.skip(`${missing}: no Sentinel can be started`);
  const prefix = uniquePrefix();
  const make = async (replica: string) => {
    const store = new RedisStore({ url: sentinel.url, prefix, replica, leaseTtlMs: 60_000 });
    stores.push(store);
    await store.start();
    return new Governor({ lanes: { chat: { limit: 2, reserve: 0, queueLimit: 10 } }, store });
  };
  const [a, b] = [await make("a"), await make("b")];
  const held = [await a.acquire("chat"), await b.acquire("chat")];
  let third: Lease | undefined;
  void a.acquire("chat").then((l) => {
    third = l;
  });
  const master = new Redis(sentinel.masterPort, "127.0.0.1", { protocol: 2 });
  try {
    const counts = await master.hgetall(`{${prefix}}:b:lane:chat`);
    assert.deepEqual(counts, { a: "1", b: "1" }, "each replica's call is counted on the master");
    assert.equal(third, undefined, "the third waits: 2 is the fleet's limit");
    held[1]!.release(); // b's release wakes a's waiter (pub/sub through the master)
    const end = Date.now() + 5000;
    while (third === undefined && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    assert.ok(third !== undefined, "a's waiter is granted after b's release");
    assert.deepEqual(await master.hgetall(`{${prefix}}:b:lane:chat`), { a: "2" });
  } finally {
    master.disconnect();
    for (const l of [held[0]!, third]) l?.release();
  }
});
