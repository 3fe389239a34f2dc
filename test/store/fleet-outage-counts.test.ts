/**
 * After an outage whose replica lease survives (shorter than `lease_ttl_s`, Redis keeping its
 * data: a network blip), Redis must count exactly what the replica holds: the releases and grants
 * made while Redis was out of reach, a release lost (or run without its answer) on the wire, and
 * one that ioredis resent after a dropped connection, so that Redis ran it twice.
 * The store reaches its private redis-server through a TCP proxy the test cuts; a second,
 * direct connection reads what Redis counts.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { Redis } from "ioredis";
import type { Lease } from "../../src/core/lease.js";
import { Governor } from "../../src/governor/governor.js";
import type { OnStoreError, RedisStore } from "../../src/store/redis/redis-store.js";
import { OutageFixture, skipWithoutRedisServer, untilConnected } from "./outage-helpers.js";
import type { RedisProcess } from "./redis-helpers.js";

const fixture = new OutageFixture();
const direct: Redis[] = [];
after(async () => {
  for (const r of direct) r.disconnect();
  await fixture.close();
});

/** A lease long enough to outlive every outage below on a loaded machine. */
const TTL_MS = 20_000;

async function setup(policy: OnStoreError = "local") {
  const { server, proxy, store, prefix } = await fixture.startBehindProxy(policy, TTL_MS);
  const gov = new Governor({
    store,
    lanes: { chat: { limit: 8, reserve: 0, queueLimit: 8, queueTimeoutMs: 5000 } },
    keys: { team: { maxInflight: 4 } },
  });
  const redis = await connectDirect(server);
  const lane = `{${prefix}}:b:lane:chat`;
  /** What Redis counts for replica r1 on the lane. */
  const counted = async () => Number((await redis.hget(lane, "r1")) ?? 0);
  /** What Redis counts for replica r1 on key team (in flight + queued). */
  const keyCounted = async () => Number((await redis.hget(`{${prefix}}:b:key:team`, "r1")) ?? 0);
  /** Whether r1's lease is alive in Redis time. */
  const leased = async () => {
    const [seconds, micros] = await redis.time();
    const expiry = await redis.zscore(`{${prefix}}:replicas`, "r1");
    return expiry !== null && Number(expiry) > Number(seconds) * 1000 + Number(micros) / 1000;
  };
  /** Ends every lease in `held`; then what Redis counts (`count`: the lane's) once the releases are in. */
  const endAll = async (held: readonly Lease[], count = counted): Promise<number> => {
    for (const l of held) l.release();
    await sent();
    await store.heartbeat();
    return count();
  };
  return { proxy, store, gov, counted, keyCounted, leased, endAll };
}

async function connectDirect(server: RedisProcess): Promise<Redis> {
  const redis = new Redis(server.url, { protocol: 2, lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on("error", () => {});
  direct.push(redis);
  await redis.connect();
  return redis;
}

/** Heartbeats until one fails: the store has seen the cut (ioredis hears of it a little later). */
async function down(store: RedisStore, policy: OnStoreError = "local"): Promise<void> {
  for (let i = 0; i < 50 && store.status().mode === "connected"; i++) {
    await store.heartbeat();
    if (store.status().mode === "connected") await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(store.status().mode, policy, "the cut is seen");
}

/**
 * Back from the outage: two heartbeats in a row get through. The first may be the rewrite (or
 * start it); the second runs after whatever the first queued on the store's one connection
 * (scripts run in the order sent), so Redis has the rewrite by then. (A heartbeat sent while
 * ioredis still reconnects fails and puts the store in its outage mode again: hence the loop.)
 */
async function back(store: RedisStore): Promise<void> {
  for (let i = 0; i < 20; i++) {
    await untilConnected(store);
    await store.heartbeat();
    if (store.status().mode === "connected") return;
  }
  assert.fail("two heartbeats in a row never got through");
}

/** Until `release`'s script has left this process (the store sends at the turn's end). */
const sent = () => new Promise((r) => setTimeout(r, 50));

describe("fleet counts after an outage the lease survives", { timeout: 60_000 }, () => {
  test("releases and grants made while Redis was out of reach are in Redis once it answers", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { proxy, store, gov, counted, leased, endAll } = await setup();
    const held: Lease[] = await Promise.all([1, 2, 3].map(() => gov.acquire("chat")));
    assert.equal(await counted(), 3);

    await proxy.cut();
    await down(store);
    held.pop()!.release();
    held.pop()!.release();
    held.push(await gov.acquire("chat")); // from the local share
    assert.ok(await leased(), "the outage is shorter than the lease: r1 is still known to Redis");

    await proxy.restore();
    await back(store);
    assert.equal(await counted(), held.length, "Redis counts the 2 calls r1 holds, not the 3 before");
    assert.equal(await endAll(held), 0, "nothing left counted once every call ended");
  });

  test("a release lost on the wire is not lost: the count is rewritten when Redis answers", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { proxy, store, gov, counted } = await setup();
    const held = await Promise.all([1, 2].map(() => gov.acquire("chat")));
    proxy.hold(); // the release leaves this process and never reaches Redis
    held.pop()!.release();
    await sent();
    await proxy.cut();
    await down(store);
    await proxy.restore();
    await back(store);
    assert.equal(await counted(), 1, "the lost release is in Redis's count");
    held.pop()!.release();
    await sent();
    await store.heartbeat();
    assert.equal(await counted(), 0);
  });

  test("a release Redis ran but whose answer was lost is not given back twice", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { proxy, store, gov, counted, endAll } = await setup();
    const held = await Promise.all([1, 2, 3, 4].map(() => gov.acquire("chat")));
    held.pop()!.release(); // Redis knows the release script from now on (no NOSCRIPT to lose)
    await sent();
    assert.equal(await counted(), 3);
    proxy.dropReplies(); // Redis runs the release; its answer never comes back
    held.pop()!.release();
    await sent();
    assert.equal(await counted(), 2, "Redis ran it");
    await proxy.cut();
    await down(store);
    await proxy.restore();
    await back(store);
    assert.equal(await counted(), 2, "one release, counted once");
    assert.equal(await endAll(held), 0);
  });

  test("a release ioredis resends after a dropped connection (so Redis ran it twice) is corrected by the next heartbeat", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { proxy, store, gov, counted, endAll } = await setup();
    const held = await Promise.all([1, 2, 3, 4].map(() => gov.acquire("chat")));
    held.pop()!.release(); // Redis knows the release script from now on
    await sent();
    proxy.dropReplies();
    held.pop()!.release();
    await sent();
    assert.equal(await counted(), 2, "Redis ran it");
    proxy.drop(); // ioredis reconnects at once and resends the unanswered release
    // Bounds a hang only: the resend comes within one reconnect (~50 ms).
    for (let i = 0; i < 200 && (await counted()) !== 1; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await counted(), 1, "run twice: one call too few counted, and the store saw no error");
    assert.equal(store.status().mode, "connected");
    await store.heartbeat();
    assert.equal(await counted(), 2, "rewritten to the 2 calls held");
    assert.equal(await endAll(held), 0);
  });

  test("a key's bound: divided while Redis is away, and its count rewritten when Redis answers", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { proxy, store, gov, keyCounted, endAll } = await setup();
    const held = await Promise.all([1, 2].map(() => gov.acquire("chat", { key: "team" })));
    assert.equal(await keyCounted(), 2);
    await proxy.cut();
    await down(store);
    assert.ok(gov.checkKey("team") !== undefined, "4 ÷ 2 expected replicas: this replica's 2 fill its share");
    held.pop()!.release();
    held.pop()!.release();
    held.push(await gov.acquire("chat", { key: "team" })); // from the share, not sent to Redis
    await proxy.restore();
    await back(store);
    assert.equal(await keyCounted(), 1, "Redis counts the 1 keyed call held, not the 2 before");
    assert.equal(gov.checkKey("team"), undefined, "the whole bound again");
    assert.equal(await endAll(held, keyCounted), 0);
  });

  test("closed: when a grant is what ends the outage, the releases made meanwhile are rewritten after it", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { proxy, store, gov, counted, endAll } = await setup("closed");
    const held = await Promise.all([1, 2, 3].map(() => gov.acquire("chat")));
    await proxy.cut();
    await down(store, "closed");
    held.pop()!.release();
    held.pop()!.release();
    await proxy.restore();
    // No heartbeat: grants go to Redis under `closed`; the first that gets through ends the outage.
    let lease: Lease | undefined;
    for (let i = 0; i < 100 && lease === undefined; i++) {
      lease = await gov.acquire("chat").catch(() => undefined);
      if (lease === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(lease !== undefined, "served once Redis answers");
    held.push(lease);
    assert.equal(store.status().mode, "connected");
    await store.heartbeat(); // after the rewrite the grant started, on the same connection
    assert.equal(await counted(), 2, "the call held from before and the new one");
    assert.equal(await endAll(held), 0);
  });
});
