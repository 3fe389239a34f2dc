/**
 * Fleet mode through Redis Sentinel: `store: redis+sentinel://127.0.0.1:S/sluice-master` asks the
 * Sentinel where the master is and counts there. Two Governors on it share a lane's limit, and
 * the counts are on the master the Sentinel named; after the master is killed and the Sentinel
 * promotes its replica, both stores follow it and the counts there are exact again.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { Redis } from "ioredis";
import type { Lease } from "../../src/core/lease.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
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

test("after the Sentinel fails the master over, the store follows it and the fleet's counts are exact on the new master", async (t) => {
  if (sentinel === null) return t.skip(`${missing}: no Sentinel can be started`);
  const prefix = uniquePrefix();
  const make = async (replica: string) => {
    // A short TTL: the heartbeat (every 300 ms) notices the outage and the return.
    const store = new RedisStore({ url: sentinel.url, prefix, replica, leaseTtlMs: 900 });
    stores.push(store);
    await store.start();
    return { store, gov: new Governor({ lanes: { chat: { limit: 2, reserve: 0, queueLimit: 10 } }, store }) };
  };
  const [a, b] = [await make("a"), await make("b")];
  const held = await a.gov.acquire("chat");
  await sentinel.killMaster();
  const until = async (what: string, ok: () => boolean) => {
    const end = Date.now() + 10_000;
    while (!ok()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  // Each replica sees the outage (a failed heartbeat) and then the new master (a good one).
  await until(
    "an outage seen by both",
    () => a.store.status().errors > 0 || a.store.status().mode !== "connected",
  );
  await until("both connected to the new master", () =>
    [a, b].every((r) => r.store.status().mode === "connected"),
  );
  await a.store.heartbeat();
  const promoted = new Redis(sentinel.replicaPort, "127.0.0.1", { protocol: 2 });
  try {
    assert.equal(
      await promoted.hget(`{${prefix}}:b:lane:chat`, "a"),
      "1",
      "a's call is counted on the new master",
    );
    const second = await b.gov.acquire("chat");
    let third: Lease | undefined;
    void b.gov.acquire("chat").then((l) => {
      third = l;
    });
    await b.store.heartbeat();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(third, undefined, "1 (a) + 1 (b) = the limit on the new master: a third waits");
    held.release();
    await until("b's waiter granted after a's release", () => third !== undefined);
    for (const l of [second, third!]) l.release();
  } finally {
    promoted.disconnect();
  }
});
