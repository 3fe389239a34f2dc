/**
 * A replica started after a pod was cut and its breaker opened starts from that state (DESIGN §5):
 * the latest state of each pod is kept in Redis with the Redis time it was written, and a replica
 * adopts it when it starts serving the pod, its ages moved on by the time since.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import type { GovernorOptions } from "../../src/core/options.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const stores: RedisStore[] = [];
after(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

const POD = "http://pod:7";
const options: GovernorOptions = {
  lanes: {
    chat: {
      limit: 16,
      pods: [{ id: POD, maxInflight: 16 }],
      adaptive: { floor: 2 },
      breaker: { failThreshold: 1, baseCooldownMs: 20_000, maxCooldownMs: 20_000 },
    },
  },
};

test("a replica started after a cut and a trip sees the pod's width and open breaker", async (t) => {
  const redis = await redisOrSkip(t);
  if (redis === null) return;
  const prefix = uniquePrefix();
  const storeA = new RedisStore({ url: REDIS_URL, prefix, replica: "a" });
  stores.push(storeA);
  await storeA.start();
  const a = new Governor({ ...options, store: storeA });
  const leases = await Promise.all(Array.from({ length: 10 }, () => a.acquire("chat")));
  leases[0]!.failed({ status: 503 }); // 10 in flight at the refusal: the cut halves the width to 5
  for (const l of leases.slice(1)) l.release();
  assert.equal(a.snapshot().pods[0]!.width, 5);
  (await a.acquire("chat")).failed({ status: 503 }); // refused again after the cut: the breaker opens
  assert.equal(a.isTripped(POD), true);
  const widthA = a.snapshot().pods[0]!.width;
  // What a wrote has reached Redis once a later round trip on its connection is answered.
  await storeA.heartbeat();

  // b starts afterwards, the way the gateway starts: the Governor first, then the store.
  const storeB = new RedisStore({ url: REDIS_URL, prefix, replica: "b" });
  stores.push(storeB);
  const b = new Governor({ ...options, store: storeB });
  assert.equal(b.isTripped(POD), false, "before it starts, b knows nothing of the pod");
  await storeB.start();
  const pod = b.snapshot().pods[0]!;
  assert.equal(pod.width, widthA, "b starts with the width a cut to");
  assert.ok(widthA < 16);
  assert.equal(pod.breaker, "open");
  assert.ok(pod.reopens_in_s > 10 && pod.reopens_in_s <= 24, `b's cooldown left: ${pod.reopens_in_s} s`);
  await assert.rejects(b.acquire("chat", { failFast: true }), /tripped/);

  // A Governor made after its store started reads it at once.
  const storeC = new RedisStore({ url: REDIS_URL, prefix, replica: "c" });
  stores.push(storeC);
  await storeC.start();
  const c = new Governor({ ...options, store: storeC });
  await storeC.heartbeat(); // the read was sent before this round trip: it has been answered
  assert.equal(c.isTripped(POD), true);
  assert.equal(c.snapshot().pods[0]!.width, widthA);
  redis.disconnect();
});
