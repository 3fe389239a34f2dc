/**
 * Issue 24's refund rule in the fleet's scripts, on a real Redis, beside the memory bucket: a
 * call held longer than its over-estimate takes to refill, on a busy bucket, gets its whole
 * over-estimate back (the drawn bound, `drawn-log.ts`; the refill bound alone returns nothing),
 * and the fleet's level after `grant-path` and `settle` is the level a `RateBudget` given the
 * same takes and settlement at the same (Redis) times holds: one rule in both stores.
 * Real time (Redis's clock cannot be moved): about 7 s.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { Redis } from "ioredis";
import { RateBudget } from "../../src/core/rate-budget.js";
import { runScript } from "../../src/store/redis/scripts.js";
import { redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const clients: Redis[] = [];
after(() => {
  for (const c of clients) c.disconnect();
});

const CAP = 6_000; // 100 tokens a second

describe("fleet scripts: a refund on a busy bucket", () => {
  test("returns the whole over-estimate of a call held past its refill, as the memory bucket does", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    clients.push(redis);
    const tag = `{${uniquePrefix()}}`;
    const replicas = `${tag}:replicas`;
    const lane = `${tag}:b:lane:chat`;
    const bucket = `${tag}:r:tpm:lane:chat`;
    await runScript(redis, "heartbeat", [replicas], ["r1", 60_000]);
    const redisNow = async () => {
      const [s, us] = await redis.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    const grant = async (amount: number) => {
      const reply = (await runScript(
        redis,
        "grant-path",
        [replicas, lane, bucket],
        ["r1", 1, 1, 100, CAP, amount, 0],
      )) as [number, number, string];
      assert.equal(reply[0], 1, `a grant of ${amount} tokens`);
      return Number(reply[2]);
    };
    const level = async () => Number(((await runScript(redis, "levels", [bucket], [CAP])) as [string])[0]);

    // The memory twin: the same takes at the same Redis times.
    const t0 = await redisNow();
    const twin = new RateBudget("twin", "tokens", CAP, t0);
    await grant(5_700);
    twin.take(5_700, t0);
    await sleep(3_300); // past the grant skew: the next grant's bound starts after this draw
    const a = Math.floor(await level());
    const grantedAt = await redisNow();
    const grantedLocal = performance.now();
    await grant(a); // the bucket emptied by call A
    twin.take(a, grantedAt);
    await sleep(a * 10 + 300); // held longer than its tokens take to refill: the refill bound is 0
    const b = Math.floor(await level());
    const bAt = await redisNow();
    await grant(b); // busy: another call takes what came back
    twin.take(b, bAt);

    const used = 100;
    const lag = Math.round(performance.now() - grantedLocal);
    const before = await level();
    const settledAt = await redisNow();
    const [after] = (await runScript(
      redis,
      "settle",
      [`${tag}:settled:r1`, bucket],
      [randomUUID(), 60_000, CAP, 0, a - used, lag, used],
    )) as [string];
    twin.reconcile(a, used, settledAt, settledAt - lag);

    assert.equal(
      twin.settlement(a, used, settledAt, settledAt - lag),
      0,
      "the refill bound alone returns nothing",
    );
    // A few ms between the stamps and the scripts are a few tenths of a token of refill.
    assert.ok(Number(after) - before >= a - used - 2, `refunded ${Number(after) - before} of ${a - used}`);
    assert.ok(
      Math.abs(Number(after) - twin.levelAt(settledAt)) < 3,
      `fleet ${after}, memory ${twin.levelAt(settledAt)}`,
    );
  });
});
