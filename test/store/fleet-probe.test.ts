/**
 * Exactly one half-open probe fleet-wide (DESIGN §5): two Governors share a pod whose breaker is
 * open on both; when the cooldown ends both have waiters, yet exactly one call reaches the pod
 * (counted by the pod itself, a real HTTP server) until the probe's outcome is shared; after it
 * succeeds both replicas serve again.
 */
import assert from "node:assert/strict";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";
import { ManualClock } from "../../src/core/clock.js";
import type { GovernorOptions } from "../../src/core/options.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const stores: RedisStore[] = [];
after(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

const until = async (what: string, ok: () => boolean | Promise<boolean>, ms = 5000) => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

/** The pod: counts the calls that reach it and holds each answer until `answer()`. */
async function heldPod() {
  const held: ServerResponse[] = [];
  let received = 0;
  const server = createServer((_req, res) => {
    received++;
    held.push(res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: () => received,
    answer: () => {
      for (const res of held.splice(0)) res.end("ok");
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * A replica (its own store, one prefix) whose lane's one pod opens its breaker on the first
 * failure and cools down for 400 ms.
 */
async function replicaOf(
  podUrl: string,
  prefix: string,
  replica: string,
  clock: ManualClock,
  leaseTtlMs?: number,
) {
  const store = new RedisStore({
    url: REDIS_URL,
    prefix,
    replica,
    ...(leaseTtlMs === undefined ? {} : { leaseTtlMs }),
  });
  stores.push(store);
  await store.start();
  const options: GovernorOptions = {
    lanes: {
      chat: {
        limit: 8,
        queueTimeoutMs: 10_000,
        pods: [{ id: podUrl, maxInflight: 8 }],
        adaptive: false,
        breaker: { failThreshold: 1, baseCooldownMs: 400, maxCooldownMs: 400 },
      },
    },
  };
  return { store, gov: new Governor({ ...options, store, clock }) };
}

test("one probe reaches a shared pod when its cooldown ends on two replicas, then both serve", async (t) => {
  const redis = await redisOrSkip(t);
  if (redis === null) return;
  const pod = await heldPod();
  const prefix = uniquePrefix();
  // Manual clocks: both cooldowns end in one step, before either replica can hear the other's
  // half-open state (the race pub/sub alone loses).
  const make = (replica: string, clock: ManualClock) => replicaOf(pod.url, prefix, replica, clock);
  const clockA = new ManualClock(1_000_000);
  const clockB = new ManualClock(5_000_000);
  const { store: storeA, gov: a } = await make("a", clockA);
  const { store: storeB, gov: b } = await make("b", clockB);
  (await a.acquire("chat")).failed({ status: 503 }); // opens the breaker on a, shared with b
  await until("b sees the pod open", () => b.isTripped(pod.url));
  const call = (gov: Governor) =>
    gov.run("chat", async () => {
      const response = await fetch(pod.url);
      return response.text();
    });
  const calls = [call(a), call(a), call(b), call(b)];
  assert.equal(pod.received(), 0);
  clockA.advance(600); // past the cooldown (400 ms ± 20 %) on both, in one synchronous step
  clockB.advance(600);
  await until("the probe reaches the pod", () => pod.received() >= 1);
  // A round trip on each replica's connection after its grant: both grants have been answered.
  await Promise.all([storeA.heartbeat(), storeB.heartbeat()]);
  const inflight = [a, b].map((gov) => gov.snapshot().lanes[0]!.inflight);
  assert.deepEqual(inflight.sort(), [0, 1], "one replica holds the probe, the other was refused");
  assert.equal(pod.received(), 1, "exactly one probe fleet-wide while its outcome is unknown");
  const holders = await redis.hkeys(`{${prefix}}:b:pod:${pod.url}`);
  assert.equal(holders.length, 1, `one replica holds the pod: ${holders.join(",")}`);
  pod.answer(); // the probe succeeds: the breaker closes fleet-wide
  await until("every call served", async () => {
    pod.answer();
    return pod.received() === 4;
  });
  pod.answer();
  assert.deepEqual(await Promise.all(calls), ["ok", "ok", "ok", "ok"]);
  assert.equal(a.snapshot().pods[0]!.breaker, "closed");
  assert.equal(b.snapshot().pods[0]!.breaker, "closed");
  pod.close();
  redis.disconnect();
});

test("a replica whose probe holds the pod dies: another replica probes once its lease expires", async (t) => {
  const redis = await redisOrSkip(t);
  if (redis === null) return;
  const pod = await heldPod();
  const prefix = uniquePrefix();
  const make = (replica: string, clock: ManualClock) => replicaOf(pod.url, prefix, replica, clock, 300);
  const clockA = new ManualClock(1_000_000);
  const clockB = new ManualClock(5_000_000);
  const { store: storeA, gov: a } = await make("a", clockA);
  const { gov: b } = await make("b", clockB);
  (await a.acquire("chat")).failed({ status: 503 });
  await until("b sees the pod open", () => b.isTripped(pod.url));
  const call = (gov: Governor) => gov.run("chat", async () => (await fetch(pod.url)).text());
  const fromA = call(a).catch(() => "a gone");
  const fromB = call(b);
  clockA.advance(600); // a's cooldown ends first: a sends the probe (held by the pod)
  await until("a's probe reaches the pod", () => pod.received() >= 1);
  await until("b heard a's half-open state", () => b.snapshot().pods[0]!.breaker === "half_open");
  clockB.advance(600); // b's cooldown ends too: a's probe holds the pod, so b waits
  await storeA.close(); // a dies with its probe out: no release, no heartbeat
  await until("b probes once a's lease has expired", () => pod.received() === 2);
  pod.answer();
  assert.equal(await fromB, "ok");
  assert.equal(b.snapshot().pods[0]!.breaker, "closed");
  await fromA;
  pod.close();
  redis.disconnect();
});
