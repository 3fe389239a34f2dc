/**
 * The typed script calls (src/store/redis/script-calls.ts): each reply read once into its answer
 * against a real Redis, and a reply of another shape refused with `ScriptReplyError` naming the
 * script (a script and its caller out of step), never read as `undefined` counts.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Redis } from "ioredis";
import * as script from "../../src/store/redis/script-calls.js";
import type { ScriptClient } from "../../src/store/redis/scripts.js";
import { redisOrSkip, uniquePrefix } from "./redis-helpers.js";

describe("typed script calls (real Redis)", () => {
  let redis: Redis | null = null;
  const P = `{${uniquePrefix()}}`;
  const replicasKey = `${P}:replicas`;
  const lane = `${P}:b:lane:chat`;
  const pod = `${P}:b:pod:a`;
  const request = (replica: string, limits: number[]): script.GrantRequest => ({
    ...{ replicasKey, replica, keys: [lane, pod], limits },
    ...{ metered: null, waitKey: undefined, effective: 0 },
  });
  const beat = (replica: string, counts: number[] = []) =>
    script.heartbeat(redis!, {
      ...{ replicasKey, replica, ttlMs: 15_000, keys: counts.length === 0 ? [] : [lane, pod], counts },
      ...{ rewrite: false, exact: false },
    });

  before(async (t) => {
    redis = await redisOrSkip(t as never);
  });
  after(async () => {
    if (redis === null) return;
    const keys = await redis.keys(`${P}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  test("heartbeat, grant, grant-many and arrive answer typed counts", async (t) => {
    if (redis === null) return t.skip("no Redis");
    const first = await beat("r1");
    assert.equal(first.reRegistered, true, "an unknown replica registers");
    assert.deepEqual([first.others, first.each, first.live], [[], [], []]);
    assert.equal((await beat("r2")).live.length, 1, "r1 is live beside r2");
    assert.deepEqual(await script.grant(redis, request("r1", [4, 1])), {
      ...{ granted: true, refusedAt: 0, others: [0, 0] },
      ...{ levels: [], pausesLeftMs: [], lane: null },
    });
    const refused = await script.grant(redis, request("r2", [4, 1]));
    assert.deepEqual([refused.granted, refused.refusedAt, refused.others], [false, 2, [1, 1]]);
    const many = await script.grantMany(redis, [request("r2", [4, 2]), request("r2", [4, 2])]);
    assert.deepEqual(
      many.map((a) => [a.granted, a.refusedAt, a.others]),
      [
        [true, 0, [1, 1]],
        [false, 2, [1, 1]],
      ],
      "in order: the second sees the first's slot on the pod",
    );
    const again = await beat("r2", [1, 1]);
    assert.deepEqual([again.reRegistered, again.others, again.each], [false, [1, 1], [[1], [1]]]);
    const key = `${P}:b:key:k`;
    const arrived = await script.arrive(redis, {
      replicasKey,
      replica: "r1",
      keys: [key],
      asked: [3],
      bounds: [2],
    });
    assert.deepEqual(arrived, [{ taken: 2, others: 0 }]);
  });

  test("levels and pause answer numbers (a missing bucket is full, no pause is 0 ms)", async (t) => {
    if (redis === null) return t.skip("no Redis");
    const pauseKey = `${P}:q:account:a`;
    assert.equal(await script.pause(redis, pauseKey, 60_000), 60_000);
    const read = await script.levels(redis, {
      ...{ bucketKeys: [`${P}:r:tpm:lane:chat`], caps: [1000] },
      pauseKeys: [pauseKey, `${P}:q:account:none`],
    });
    assert.deepEqual(read.levels, [1000]);
    assert.ok(
      read.pausesLeftMs[0]! > 0 && read.pausesLeftMs[0]! <= 60_000,
      `${read.pausesLeftMs[0]} ms left`,
    );
    assert.equal(read.pausesLeftMs[1], 0);
  });
});

describe("a reply of another shape", () => {
  /** A server whose scripts answer `reply` (a script out of step with its caller). */
  const answering = (reply: unknown): ScriptClient =>
    ({ evalsha: async () => reply, eval: async () => reply }) as unknown as ScriptClient;
  const g: script.GrantRequest = {
    ...{ replicasKey: "{p}:replicas", replica: "r1", keys: ["{p}:b:lane:x"], limits: [4] },
    ...{ metered: null, waitKey: undefined, effective: 0 },
  };

  test("is refused with ScriptReplyError naming the script and what was due", async () => {
    await assert.rejects(script.grant(answering([1]), g), (e: unknown) => {
      assert.ok(e instanceof script.ScriptReplyError);
      assert.deepEqual([e.script, e.expected, e.reply], ["grant", "2 elements", [1]]);
      return true;
    });
    await assert.rejects(script.grant(answering([1, "many"]), g), script.ScriptReplyError);
    await assert.rejects(script.grantMany(answering([[1, 0]]), [g, g]), script.ScriptReplyError);
    await assert.rejects(
      script.advertise(answering("OK"), {
        ...{ indexKey: "i", replicasKey: "r", replica: "r1", channel: "", ttlMs: 1000 },
        ...{ waiting: false, keys: [], values: [] },
      }),
      script.ScriptReplyError,
    );
  });
});
