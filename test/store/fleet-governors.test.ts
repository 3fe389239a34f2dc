/**
 * Two Governors, each with its own RedisStore on one Redis (two replicas of a fleet), share every
 * budget: together they never hold more than a lane's limit or a pod's width, a release on one
 * wakes a waiter on the other (pub/sub), a replica that stops heartbeating loses its slots, and a
 * flushed Redis is re-initialised by the next heartbeat.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { Lease } from "../../src/core/lease.js";
import type { GovernorOptions } from "../../src/core/options.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const stores: RedisStore[] = [];
after(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

async function fleet(prefix: string, options: GovernorOptions, ttlMs = 15_000) {
  const make = async (replica: string) => {
    const store = new RedisStore({ url: REDIS_URL, prefix, replica, leaseTtlMs: ttlMs });
    stores.push(store);
    await store.start();
    return { store, gov: new Governor({ ...options, store }) };
  };
  return [await make("a"), await make("b")] as const;
}

const lanes: GovernorOptions = {
  lanes: {
    chat: {
      limit: 3,
      reserve: 0,
      queueLimit: 20,
      queueTimeoutMs: 10_000,
      pods: [{ id: "http://pod:1", maxInflight: 8 }],
    },
  },
};

function track(p: Promise<Lease>, held: Lease[]): Promise<Lease> {
  return p.then((l) => {
    held.push(l);
    return l;
  });
}

const until = async (what: string, ok: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe("a fleet of two Governors on one Redis", () => {
  test("never holds more than the lane's limit across replicas, and a release on one wakes the other", async (t) => {
    const probe = await redisOrSkip(t);
    if (probe === null) return;
    probe.disconnect();
    const [a, b] = await fleet(uniquePrefix(), lanes);
    const held: Lease[] = [];
    const calls = [
      ...Array.from({ length: 5 }, () => track(a.gov.acquire("chat"), held)),
      ...Array.from({ length: 5 }, () => track(b.gov.acquire("chat"), held)),
    ];
    await until("three grants", () => held.length === 3);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(held.length, 3, "3 across both replicas, not 3 each");
    await a.store.heartbeat();
    const lane = a.gov.snapshot().lanes[0]!;
    assert.equal(
      lane.fleet_inflight ?? lane.inflight,
      3,
      "the snapshot counts the fleet, with this replica's share",
    );
    let peak = held.length;
    while (held.length < 10) {
      const live = held.filter((l) => (l as unknown as { state: string }).state === "granted");
      peak = Math.max(peak, live.length);
      assert.ok(live.length <= 3, `at most 3 in flight fleet-wide, saw ${live.length}`);
      live[0]!.release();
      const before = held.length;
      await until("the next grant", () => held.length > before);
    }
    for (const l of held) l.release();
    await Promise.all(calls);
    assert.equal(peak, 3);
    await until(
      "all released",
      () => a.gov.snapshot().lanes[0]!.inflight + b.gov.snapshot().lanes[0]!.inflight === 0,
    );
  });

  test("a replica that stops heartbeating (killed) loses its slots within its lease TTL", async (t) => {
    const probe = await redisOrSkip(t);
    if (probe === null) return;
    probe.disconnect();
    const [a, b] = await fleet(uniquePrefix(), lanes, 300);
    const heldByA = await Promise.all([a.gov.acquire("chat"), a.gov.acquire("chat"), a.gov.acquire("chat")]);
    assert.equal(heldByA.length, 3);
    let got: Lease | undefined;
    void b.gov.acquire("chat").then((l) => {
      got = l;
    });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(got, undefined, "b waits: a holds the 3");
    await a.store.close(); // a dies: no release, no heartbeat
    await until("b granted once a's lease expired", () => got !== undefined, 3000);
    got!.release();
  });

  test("after Redis loses its data, the next heartbeat writes each replica's counts back", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    const prefix = uniquePrefix();
    const [a, b] = await fleet(prefix, lanes);
    const held = await Promise.all([a.gov.acquire("chat"), a.gov.acquire("chat")]);
    const keys = await redis.keys(`{${prefix}}*`);
    await redis.del(...keys); // a FLUSHALL of this fleet's keys
    await a.store.heartbeat();
    await b.store.heartbeat();
    assert.equal(await redis.hget(`{${prefix}}:b:lane:chat`, "a"), "2", "a's 2 calls are counted again");
    const one = await b.gov.acquire("chat");
    let second: Lease | undefined;
    void b.gov.acquire("chat").then((l) => {
      second = l;
    });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(second, undefined, "2 (a) + 1 (b) = the limit: exact again");
    held[0]!.release();
    await until("b's waiter granted after a's release", () => second !== undefined);
    for (const l of [held[1]!, one, second!]) l.release();
    redis.disconnect();
  });
});

describe("pod state shared across a fleet", () => {
  test("a breaker opened by one replica is open on the other, with the cooldown it has left", async (t) => {
    const probe = await redisOrSkip(t);
    if (probe === null) return;
    probe.disconnect();
    const [a, b] = await fleet(uniquePrefix(), {
      lanes: {
        chat: {
          limit: 8,
          pods: [{ id: "http://pod:1", maxInflight: 8 }],
          adaptive: false,
          breaker: { failThreshold: 1, baseCooldownMs: 5_000, maxCooldownMs: 5_000 },
        },
      },
    });
    const lease = await a.gov.acquire("chat");
    lease.failed({ status: 503 });
    assert.equal(a.gov.isTripped("http://pod:1"), true);
    await until("b sees the pod open", () => b.gov.isTripped("http://pod:1"));
    const pod = b.gov.snapshot().pods[0]!;
    assert.equal(pod.breaker, "open");
    assert.ok(pod.reopens_in_s > 3 && pod.reopens_in_s <= 6, `b's cooldown left: ${pod.reopens_in_s} s`);
    await assert.rejects(b.gov.acquire("chat", { failFast: true }), /tripped/);
  });

  test("a width cut on one replica is the other's width too (one cut per congestion event, fleet-wide)", async (t) => {
    const probe = await redisOrSkip(t);
    if (probe === null) return;
    probe.disconnect();
    const [a, b] = await fleet(uniquePrefix(), {
      lanes: { chat: { limit: 16, pods: [{ id: "http://pod:2", maxInflight: 16 }], adaptive: { floor: 2 } } },
    });
    const leases = await Promise.all(Array.from({ length: 10 }, () => a.gov.acquire("chat")));
    leases[0]!.failed({ status: 503 }); // 10 in flight at the refusal: the first cut halves it to 5
    for (const l of leases.slice(1)) l.release();
    assert.equal(a.gov.snapshot().pods[0]!.width, 5);
    await until("b's width follows", () => b.gov.snapshot().pods[0]!.width === 5);
  });
});
