/**
 * The fleet store's Lua scripts called directly (grant, release, heartbeat), with the edge cases
 * of lease expiry and a flushed Redis. Expiry is set in Redis time directly (a lease whose expiry
 * is already past), so no test waits for a TTL.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import type { Redis } from "ioredis";
import { FleetGrants, type GrantRequest } from "../../src/store/redis/grant.js";
import { isReplyCode, runScript } from "../../src/store/redis/scripts.js";
import { redisOrSkip, uniquePrefix } from "./redis-helpers.js";

describe("fleet store scripts (real Redis)", () => {
  let redis: Redis | null = null;
  const P = `{${uniquePrefix()}}`;
  const replicas = `${P}:replicas`;
  const lane = `${P}:b:lane:chat`;
  const pod = `${P}:b:pod:a`;

  before(async (t) => {
    redis = await redisOrSkip(t as never);
  });
  after(async () => {
    if (redis === null) return;
    const keys = await redis.keys(`${P}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  const heartbeat = (replica: string, counts: Record<string, number> = {}) =>
    runScript(
      redis!,
      "heartbeat",
      [replicas, ...Object.keys(counts)],
      [replica, 15_000, ...Object.values(counts)],
    );
  const grant = (replica: string, limits: [number, number]) =>
    runScript(redis!, "grant", [replicas, lane, pod], [replica, ...limits]);
  const waiting = `${P}:waiting`;
  const release = (replica: string, channel = "") =>
    runScript(redis!, "release", [waiting, lane, pod], [replica, channel, 1, 1]);

  test("a replica without a live lease is told to re-register", async (t) => {
    if (redis === null) return t.skip("no Redis");
    await assert.rejects(grant("ghost", [4, 4]), (e: unknown) => isReplyCode(e, "SLUICE_UNKNOWN_REPLICA"));
  });

  test("a grant takes every budget of the path or none, and names the first that had no room", async (t) => {
    if (redis === null) return t.skip("no Redis");
    const [first] = (await heartbeat("r1")) as [number, number];
    assert.equal(first, 1, "an unknown replica registers");
    assert.deepEqual(await grant("r1", [4, 1]), [1, 0, 0]);
    assert.deepEqual(await grant("r1", [4, 1]), [-2, 0, 0], "the pod (budget 2) is full");
    assert.deepEqual(await redis!.hgetall(lane), { r1: "1" }, "the lane was not taken alone");
    await release("r1");
    assert.deepEqual(
      [await redis!.hgetall(lane), await redis!.hgetall(pod)],
      [{}, {}],
      "never below zero, nothing left",
    );
  });

  test("counts are fleet-wide: two replicas share a limit", async (t) => {
    if (redis === null) return t.skip("no Redis");
    await heartbeat("r1");
    await heartbeat("r2");
    assert.deepEqual(await grant("r1", [2, 9]), [1, 0, 0]);
    assert.deepEqual(await grant("r2", [2, 9]), [1, 1, 1], "it answers what the others hold");
    assert.deepEqual(await grant("r2", [2, 9]), [-1, 1, 1], "the lane's 2 are held by two replicas");
    await release("r1");
    assert.deepEqual(await grant("r2", [2, 9]), [1, 0, 0]);
    await release("r2");
    await release("r2");
  });

  test("a replica whose lease expired (killed) loses its slots to the others", async (t) => {
    if (redis === null) return t.skip("no Redis");
    await heartbeat("dead");
    await heartbeat("live");
    assert.deepEqual(await grant("dead", [1, 9]), [1, 0, 0]);
    assert.deepEqual(await grant("live", [1, 9]), [-1, 1, 1]);
    await redis!.zadd(replicas, 1, "dead"); // its lease expired long ago (Redis time)
    assert.deepEqual(await grant("live", [1, 9]), [1, 0, 0], "the dead replica's slot counts no more");
    assert.equal(await redis!.hget(lane, "dead"), null, "and its field is dropped on the way");
    await release("live");
  });

  test("after FLUSHALL-like loss, a heartbeat re-registers the replica's counts exactly", async (t) => {
    if (redis === null) return t.skip("no Redis");
    await heartbeat("r3");
    assert.deepEqual(await grant("r3", [5, 5]), [1, 0, 0]);
    assert.deepEqual(await grant("r3", [5, 5]), [1, 0, 0]);
    await redis!.del(replicas, lane, pod); // what a flushed or restarted-empty Redis looks like
    const [reregistered, , ...others] = (await heartbeat("r3", { [lane]: 2, [pod]: 2 })) as number[];
    assert.deepEqual([reregistered, others], [1, [0, 0]]);
    assert.deepEqual([await redis!.hget(lane, "r3"), await redis!.hget(pod, "r3")], ["2", "2"]);
    const [again] = (await heartbeat("r3", { [lane]: 2, [pod]: 2 })) as [number, number];
    assert.equal(again, 0, "a known replica's heartbeat only renews");
    await release("r3");
    await release("r3");
  });

  test("with its rewrite flag, a known replica's heartbeat writes its counts back (after an outage its lease outlived)", async (t) => {
    if (redis === null) return t.skip("no Redis");
    await heartbeat("r9");
    assert.deepEqual(await grant("r9", [5, 5]), [1, 0, 0]);
    assert.deepEqual(await grant("r9", [5, 5]), [1, 0, 0]);
    // Meanwhile r9 released one call while Redis was out of reach, and no longer holds any on the pod.
    const [reregistered] = (await runScript(
      redis!,
      "heartbeat",
      [replicas, lane, pod],
      ["r9", 15_000, 1, 0, 1],
    )) as number[];
    assert.equal(reregistered, 0, "known: not a re-registration");
    assert.deepEqual([await redis!.hget(lane, "r9"), await redis!.hget(pod, "r9")], ["1", null]);
    await runScript(redis!, "heartbeat", [replicas, lane, pod], ["r9", 15_000, 0, 0, 1]);
    assert.deepEqual([await redis!.hgetall(lane), await redis!.hgetall(pod)], [{}, {}]);
  });

  test("a release publishes on the fleet's channel so waiters elsewhere look again", async (t) => {
    if (redis === null) return t.skip("no Redis");
    const sub = redis!.duplicate();
    const channel = `${P}:released`;
    const got = new Promise<string>((resolve) => sub.on("message", (_c, m) => resolve(m)));
    await sub.subscribe(channel);
    await heartbeat("r4");
    await redis!.zadd(waiting, Date.now() + 60_000, "r5"); // another replica waits
    await grant("r4", [1, 1]);
    await release("r4", channel);
    assert.equal(await got, `r4\n1 ${lane}\n1 ${pod}`, "who released, and how many slots each budget gained");
    await redis!.del(waiting);
    sub.disconnect();
  });

  test("a release publishes nothing while no other replica waits (counted at Redis)", async (t) => {
    if (redis === null) return t.skip("no Redis");
    const channel = `${P}:released`;
    const sub = redis!.duplicate();
    const heard: string[] = [];
    // Messages on one channel arrive in order: once the fence is heard, a release's would have been.
    const fenced = new Promise<void>((resolve) =>
      sub.on("message", (_c, m) => {
        heard.push(m);
        if (m === "fence") resolve();
      }),
    );
    await sub.subscribe(channel);
    await heartbeat("r6");
    await grant("r6", [9, 9]);
    assert.equal(await release("r6", channel), 0, "nobody in the waiting index");
    await redis!.zadd(waiting, Date.now() + 60_000, "r6"); // only the releaser itself waits
    await grant("r6", [9, 9]);
    assert.equal(await release("r6", channel), 0, "its own waiters are woken in its process");
    assert.equal(await redis!.publish(channel, "fence"), 1, "the subscriber is listening");
    await fenced;
    assert.deepEqual(heard, ["fence"], "the channel carried no release");
    await redis!.del(waiting);
    sub.disconnect();
  });

  test("one release call gives back several slots per budget, never below zero", async (t) => {
    if (redis === null) return t.skip("no Redis");
    await heartbeat("r7");
    for (let i = 0; i < 3; i++) await grant("r7", [9, 9]);
    await runScript(redis!, "release", [waiting, lane, pod], ["r7", "", 2, 5]);
    assert.deepEqual([await redis!.hget(lane, "r7"), await redis!.hget(pod, "r7")], ["1", null]);
    await runScript(redis!, "release", [waiting, lane], ["r7", "", 1]);
    assert.equal(await redis!.hget(lane, "r7"), null);
  });

  test("the grants of one turn in one script answer and take exactly as they would one by one (property)", async (t) => {
    if (redis === null) return t.skip("no Redis");
    const requestArb = fc.record({
      pod: fc.boolean(),
      laneLimit: fc.integer({ min: 1, max: 4 }),
      podLimit: fc.integer({ min: 1, max: 4 }),
      ranked: fc.boolean(),
      effective: fc.integer({ min: 0, max: 2 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(requestArb, { minLength: 2, maxLength: 8 }),
        fc.nat(2),
        fc.tuple(fc.nat(2), fc.nat(2), fc.nat(2)),
        async (asks, othersHold, othersWait) => {
          // The same fleet twice: one prefix granted one script per grant, the other in one batch.
          const run = async (batched: boolean) => {
            const T = `{${uniquePrefix()}}`;
            const keys = {
              replicas: `${T}:replicas`,
              lane: `${T}:b:lane:x`,
              pod: `${T}:b:pod:p`,
              w: `${T}:w:lane:x`,
            };
            for (const r of ["me", "other"])
              await runScript(redis!, "heartbeat", [keys.replicas], [r, 60_000]);
            if (othersHold > 0) await redis!.hset(keys.lane, "other", othersHold);
            await redis!.hset(keys.w, "other", othersWait.join(" "));
            const requests: GrantRequest[] = asks.map((a) => ({
              replicasKey: keys.replicas,
              replica: "me",
              keys: a.pod ? [keys.lane, keys.pod] : [keys.lane],
              limits: a.pod ? [a.laneLimit, a.podLimit] : [a.laneLimit],
              metered: null,
              waitKey: a.ranked ? keys.w : undefined,
              effective: a.effective,
            }));
            const grants = new FleetGrants(redis!, () => {});
            let answers: unknown[];
            if (batched) {
              const pending = requests.map((r) => grants.ask(r));
              grants.flush();
              answers = await Promise.all(pending);
            } else {
              answers = [];
              for (const r of requests) {
                const one = grants.ask(r);
                grants.flush(); // alone in its turn: its own script
                answers.push(await one);
              }
            }
            const held = [await redis!.hgetall(keys.lane), await redis!.hgetall(keys.pod)];
            await redis!.del(...Object.values(keys));
            return { answers, held };
          };
          assert.deepEqual(await run(true), await run(false));
        },
      ),
      { numRuns: 30 },
    );
  });
});
