/**
 * A turn's grants in one script (`FleetGrants`, `grant-many.lua`) through a real RedisStore: the
 * batch keeps the limit, and a batch refused because Redis forgot the replica (flushed,
 * restarted empty) re-registers it and is asked again, every grant of it answered.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { Redis } from "ioredis";
import { Path } from "../../src/core/path.js";
import { DEFAULT_RANK } from "../../src/core/priority.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { closeAndClean, REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const stores: RedisStore[] = [];
let redis: Redis | null = null;
const prefixes: string[] = [];
after(() => closeAndClean(stores, prefixes, redis));

async function store(limit: number) {
  const prefix = uniquePrefix();
  prefixes.push(prefix);
  const s = new RedisStore({ url: REDIS_URL, prefix, replica: "r", leaseTtlMs: 600_000 });
  stores.push(s);
  await s.start();
  const path = new Path("x", [s.concurrency("lane:x", limit, 0, "x")], 1, null);
  return { s, path, key: `{${prefix}}:b:lane:x`, replicas: `{${prefix}}:replicas` };
}

/** `n` grants taken and asked in one synchronous run (one turn, so one script). */
function grantMany(s: RedisStore, path: Path, n: number): Promise<boolean[]> {
  const now = performance.now();
  const asks: Promise<boolean>[] = [];
  for (let i = 0; i < n; i++) {
    assert.ok(s.take(path, DEFAULT_RANK, 1, now), "the local mirror has room");
    asks.push(s.confirm(path, DEFAULT_RANK));
  }
  return Promise.all(asks);
}

describe("fleet grants batched per turn (real Redis)", () => {
  test("a turn's grants take the room there is, and no more, across replicas", async (t) => {
    redis = redis ?? (await redisOrSkip(t));
    if (redis === null) return;
    const { s, path, key } = await store(5);
    await redis.hset(key, "other", 2); // another replica holds 2 of the 5 (not yet heard of)
    await redis.zadd(`{${prefixes.at(-1)}}:replicas`, Date.now() + 600_000, "other");
    const answers = await grantMany(s, path, 5);
    assert.deepEqual(answers, [true, true, true, false, false], "3 granted, in the order asked");
    assert.equal(await redis.hget(key, "r"), "3");
  });

  test("a batch refused for an unknown replica re-registers it and every grant is answered", async (t) => {
    redis = redis ?? (await redisOrSkip(t));
    if (redis === null) return;
    const { s, path, key, replicas } = await store(10);
    await redis.del(replicas); // what a flushed or restarted-empty Redis looks like to this replica
    const answers = await grantMany(s, path, 4);
    assert.deepEqual(answers, [true, true, true, true]);
    assert.equal(await redis.hget(key, "r"), "4", "counted once each after the re-registration");
  });
});
