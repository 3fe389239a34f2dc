/**
 * The metered scripts called directly on a real Redis: a bucket in a grant refuses past its level
 * (all or nothing with the concurrency budgets) and, for a call that is not interactive, past
 * its level less the interactive reserve; refills with Redis time, a missing bucket is
 * full, a refund never lifts it above capacity, debt is carried, a settlement re-sent under its
 * id is applied once; an account's pause key refuses
 * every grant until it expires, and a shorter pause never cuts a longer one.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, test } from "node:test";
import type { Redis } from "ioredis";
import { runScript } from "../../src/store/redis/scripts.js";
import { redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const clients: Redis[] = [];
after(() => {
  for (const c of clients) c.disconnect();
});

async function setup(t: Parameters<typeof redisOrSkip>[0]) {
  const redis = await redisOrSkip(t);
  if (redis === null) return null;
  clients.push(redis);
  const tag = `{${uniquePrefix()}}`;
  const keys = {
    replicas: `${tag}:replicas`,
    lane: `${tag}:b:lane:chat`,
    bucket: `${tag}:r:tpm:lane:chat`,
    pause: `${tag}:q:account:prod`,
    settled: `${tag}:settled:r1`,
  };
  await runScript(redis, "heartbeat", [keys.replicas], ["r1", 60_000]);
  /**
   * grant-path with the lane (limit 10) and the bucket (capacity `cap`, leaving at least `floor`:
   * its interactive reserve for a call of another class), optionally the pause.
   */
  const grant = async (cap: number, amount: number, withPause = false, floor = 0) =>
    (await runScript(
      redis,
      "grant-path",
      [keys.replicas, keys.lane, keys.bucket, ...(withPause ? [keys.pause] : [])],
      ["r1", 1, 1, 10, cap, amount, floor],
    )) as [number, number, string, number?];
  const levels = async (cap: number) => (await runScript(redis, "levels", [keys.bucket], [cap])) as [string];
  /** A settlement of `delta` on the bucket, under a fresh id unless `id` is given (a re-send). */
  const settle = async (cap: number, delta: number, id: string = randomUUID()) =>
    (await runScript(redis, "settle", [keys.settled, keys.bucket], [id, 60_000, cap, delta])) as [string];
  const redisNow = async () => {
    const [s, us] = await redis.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };
  return { redis, keys, grant, levels, settle, redisNow };
}

describe("fleet scripts: token and request buckets", () => {
  test("a missing bucket is full; a grant takes its amount, and one past the level is refused, taking nothing", async (t) => {
    const s = await setup(t);
    if (s === null) return;
    assert.deepEqual(await s.levels(1000), ["1000"], "a bucket never written starts full");
    const first = await s.grant(1000, 600);
    assert.equal(first[0], 1);
    assert.ok(Number(first[2]) >= 400 && Number(first[2]) < 401, `level after the take: ${first[2]}`);
    const second = await s.grant(1000, 600);
    assert.equal(second[0], -2, "refused naming the bucket (the second budget of the path)");
    assert.ok(Number(second[2]) < 600, "the level answered is the fleet's, without the refused take");
    assert.equal(
      await s.redis.hget(s.keys.lane, "r1"),
      "1",
      "the lane's slot was not taken by the refused grant",
    );
  });

  test("a call that is not interactive must leave the floor (the reserve); an interactive one (floor 0) may take it", async (t) => {
    const s = await setup(t);
    if (s === null) return;
    const first = await s.grant(1000, 700, false, 300);
    assert.equal(first[0], 1, "700 taken leaves the 300 kept");
    const bulk = await s.grant(1000, 1, false, 300);
    assert.equal(bulk[0], -2, "at the floor: refused naming the bucket");
    assert.ok(Number(bulk[2]) < 301, `the level answered, without the refused take: ${bulk[2]}`);
    const interactive = await s.grant(1000, 300, false, 0);
    assert.equal(interactive[0], 1, "floor 0: the whole bucket");
    assert.ok(Number(interactive[2]) < 1, `emptied: ${interactive[2]}`);
  });

  test("refills with Redis time: a level written 30 s ago (Redis time) has refilled half a minute's worth", async (t) => {
    const s = await setup(t);
    if (s === null) return;
    const before = await s.redisNow();
    await s.redis.hset(s.keys.bucket, "level", "0", "t", String(before - 30_000));
    const [level] = await s.levels(6000);
    const afterMs = await s.redisNow();
    // 100 tokens per second: 3000 after 30 s, plus at most what the refill added while we asked.
    assert.ok(Number(level) >= 3000, level);
    assert.ok(Number(level) <= 3000 + ((afterMs - before) * 6000) / 60_000, level);
    const grant = await s.grant(6000, 2900);
    assert.equal(grant[0], 1, "the refilled tokens can be taken");
  });

  test("a refund never lifts a bucket above its capacity; a charge past zero is debt, carried until the refill pays it", async (t) => {
    const s = await setup(t);
    if (s === null) return;
    await s.grant(1000, 200);
    assert.deepEqual(await s.settle(1000, 5000), ["1000"], "refund capped at capacity");
    const [debt] = await s.settle(1000, -1500);
    assert.ok(Number(debt) >= -500 && Number(debt) < -499, `in debt: ${debt}`);
    const refused = await s.grant(1000, 1);
    assert.equal(refused[0], -2, "in debt, even one token is refused");
    assert.ok(Number(refused[2]) < 0, "the debt is still there");
    const ttl = await s.redis.pttl(s.keys.bucket);
    assert.ok(ttl > 0 && ttl <= 91_000, `the hash lives until the refill fills it: ${ttl} ms`);
  });
});

describe("fleet scripts: an account's quota pause", () => {
  test("a pause key refuses every grant until it expires; a shorter pause never cuts a longer one", async (t) => {
    const s = await setup(t);
    if (s === null) return;
    const set = (ms: number) => runScript(s.redis, "pause", [s.keys.pause], [ms]) as Promise<number>;
    assert.equal(await set(300), 300);
    const paused = await s.grant(1000, 10, true);
    assert.equal(paused[0], -3, "refused naming the pause (the third budget of the path)");
    assert.ok((paused[3] ?? 0) > 0 && (paused[3] ?? 0) <= 300, `ms left answered: ${paused[3]}`);
    assert.equal(await s.redis.hget(s.keys.lane, "r1"), null, "nothing taken while paused");
    assert.ok((await set(50)) > 50, "the longer pause stands");
    // Expiry is Redis's own clock: wait for the key to go, then the same grant passes.
    while ((await s.redis.pttl(s.keys.pause)) > 0) await new Promise((r) => setTimeout(r, 20));
    const resumed = await s.grant(1000, 10, true);
    assert.equal(resumed[0], 1);
    assert.equal(resumed[3], 0, "no pause left");
  });

  test("a settlement re-sent under its id is applied once, and still answers the levels", async (t) => {
    const s = await setup(t);
    if (s === null) return;
    await s.grant(100_000, 60_000); // 40,000 left: room for one refund of 30,000 under the cap
    const [once] = await s.settle(100_000, 30_000, "run1:1");
    assert.ok(Number(once) >= 70_000 && Number(once) < 70_100, `refunded once: ${once}`);
    const [again] = await s.settle(100_000, 30_000, "run1:1");
    assert.ok(Number(again) >= Number(once) && Number(again) < 70_100, `not twice: ${again}`);
    const [other] = await s.settle(100_000, -10_000, "run2:1"); // another run's first: its own id
    assert.ok(Number(other) >= 60_000 && Number(other) < 60_100, `a new id is applied: ${other}`);
    const ttl = await s.redis.pttl(s.keys.settled);
    assert.ok(ttl > 0 && ttl <= 60_000, `the ids expire: ${ttl} ms`);
  });

  test("a replica's last 1,024 settlement ids are kept, the oldest dropped first", async (t) => {
    const s = await setup(t);
    if (s === null) return;
    for (let i = 1; i <= 1030; i++) await s.settle(100_000, 0, `run:${i}`);
    assert.equal(await s.redis.zcard(s.keys.settled), 1024);
    assert.equal(await s.redis.zscore(s.keys.settled, "run:1"), null, "the oldest went");
    assert.notEqual(await s.redis.zscore(s.keys.settled, "run:1030"), null, "the newest stays");
  });
});
