/**
 * Token budgets (`tpm`) across a fleet: two Governors, each with its own RedisStore on one prefix,
 * reserve from one bucket in Redis. Concurrent grants from both never reserve more than the
 * bucket's capacity plus its refill; a settlement on one replica is seen by the other; the
 * bucket's interactive reserve holds fleet-wide (the grant script checks it); and, as a
 * property over random acquires and endings, a provider that charges each call's real usage at
 * the grant never sees its own bucket (same capacity, same refill) overdrawn.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import fc from "fast-check";
import type { Redis } from "ioredis";
import type { Lease } from "../../src/core/lease.js";
import type { GovernorOptions } from "../../src/core/options.js";
import { RateBudget } from "../../src/core/rate-budget.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { runScript } from "../../src/store/redis/scripts.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const TPM = 6000; // 100 tokens per second
const stores: RedisStore[] = [];
after(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

const options: GovernorOptions = {
  lanes: { chat: { limit: 100, reserve: 0, queueLimit: 100, queueTimeoutMs: 600_000, tpm: TPM } },
};

async function fleet(prefix: string) {
  const make = async (replica: string) => {
    const store = new RedisStore({ url: REDIS_URL, prefix, replica });
    stores.push(store);
    await store.start();
    return { store, gov: new Governor({ ...options, store }) };
  };
  return [await make("a"), await make("b")] as const;
}

/** Redis's clock in ms: the buckets refill on it. */
async function redisNow(redis: Redis): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Number(us) / 1000;
}

const available = (gov: Governor) => gov.snapshot().lanes[0]!.tokens!.available;
const tick = () => new Promise((r) => setTimeout(r, 20));

describe("token budgets across a fleet", () => {
  test("concurrent grants from two replicas never reserve more than capacity + refill", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    const [a, b] = await fleet(uniquePrefix());
    const start = await redisNow(redis);
    const granted: Lease[] = [];
    const aborts = new AbortController();
    const calls = Array.from({ length: 20 }, (_, i) =>
      (i % 2 === 0 ? a : b).gov
        .acquire("chat", { tokens: 1000, signal: aborts.signal })
        .then((l) => granted.push(l))
        .catch(() => {}),
    );
    // Six of 1000 fit in the full bucket; the rest wait for the refill (one per 10 s).
    while (granted.length < 6) await tick();
    for (let i = 0; i < 10; i++) await tick();
    const elapsed = (await redisNow(redis)) - start;
    const bound = TPM + (elapsed * TPM) / 60_000;
    assert.ok(granted.length * 1000 <= bound, `${granted.length} × 1000 reserved within ${bound.toFixed(0)}`);
    aborts.abort();
    await Promise.all(calls);
    for (const l of granted) l.release();
    redis.disconnect();
  });

  test("a settlement on one replica is seen by the other", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    const [a, b] = await fleet(uniquePrefix());
    const big = await a.gov.acquire("chat", { tokens: 6000 });
    await b.store.heartbeat();
    assert.ok(available(b.gov) < 100, `b sees the fleet's bucket nearly empty: ${available(b.gov)}`);
    big.succeeded({ tokens: 1000 }); // 5000 back, at once
    // The settlement reaches Redis asynchronously; b's heartbeat re-reads the fleet's level.
    let seen = 0;
    for (let i = 0; i < 100 && seen < 5000; i++) {
      await b.store.heartbeat();
      seen = available(b.gov);
      if (seen < 5000) await tick();
    }
    assert.ok(seen >= 5000 && seen <= TPM, `b sees the refund: ${seen}`);
    const next = await b.gov.acquire("chat", { tokens: 4500 });
    assert.equal(next.lane, "chat", "b reserves from the refunded tokens");
    next.release();
    redis.disconnect();
  });
});

describe("the interactive reserve across a fleet", () => {
  test("bulk calls on one replica drain the fleet's bucket to its reserve; the other replica's bulk waits, its interactive call is granted at once", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    const prefix = uniquePrefix();
    // 100 tokens a second: the refill during the test is far below the 500 the waiting bulk call needs.
    const lanes = {
      chat: { limit: 100, reserve: 0, queueLimit: 100, queueTimeoutMs: 600_000, tpm: TPM, tpmReserve: 2000 },
    };
    const [a, b] = await Promise.all(
      ["a", "b"].map(async (replica) => {
        const store = new RedisStore({ url: REDIS_URL, prefix, replica });
        stores.push(store);
        await store.start();
        return new Governor({ lanes, store });
      }),
    );
    const flood = await a!.acquire("chat", { priority: "bulk", tokens: 4000 });
    const aborts = new AbortController();
    let bulkGranted = false;
    const bulk = b!
      .acquire("chat", { priority: "bulk", tokens: 500, signal: aborts.signal })
      .then((l) => {
        bulkGranted = true;
        l.release();
      })
      .catch(() => {});
    for (let i = 0; i < 5; i++) await tick();
    assert.equal(bulkGranted, false, "b's bulk call would take the fleet's bucket below its reserve");
    const chat = await b!.acquire("chat", { priority: "interactive", tokens: 1500 });
    assert.equal(chat.lane, "chat", "b's interactive call takes from the reserve");
    const [level] = (await runScript(redis, "levels", [`{${prefix}}:r:tpm:lane:chat`], [TPM])) as [string];
    assert.ok(Number(level) < 2000 - 1000, `the fleet's level went below the reserve: ${level}`);
    assert.equal(bulkGranted, false);
    aborts.abort();
    await bulk;
    chat.release();
    flood.release();
    a!.close();
    b!.close();
    redis.disconnect();
  });
});

describe("request budgets across a fleet", () => {
  test("an rpm budget counts one per call across both replicas", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    const prefix = uniquePrefix();
    const rpm: GovernorOptions = {
      lanes: { chat: { limit: 100, reserve: 0, queueLimit: 100, queueTimeoutMs: 600_000, rpm: 4 } },
    };
    const [a, b] = await Promise.all(
      ["a", "b"].map(async (replica) => {
        const store = new RedisStore({ url: REDIS_URL, prefix, replica });
        stores.push(store);
        await store.start();
        return new Governor({ ...rpm, store });
      }),
    );
    const granted: Lease[] = [];
    const aborts = new AbortController();
    const start = await redisNow(redis);
    const calls = Array.from({ length: 8 }, (_, i) =>
      (i % 2 === 0 ? a! : b!)
        .acquire("chat", { tokens: 5000, signal: aborts.signal })
        .then((l) => granted.push(l))
        .catch(() => {}),
    );
    while (granted.length < 4) await tick();
    for (let i = 0; i < 10; i++) await tick();
    const elapsed = (await redisNow(redis)) - start;
    // 4 a minute across the fleet, whatever their tokens: a fifth needs 15 s of refill.
    assert.equal(granted.length, 4 + Math.floor((elapsed * 4) / 60_000));
    aborts.abort();
    await Promise.all(calls);
    for (const l of granted) l.succeeded({ tokens: 1 });
    a!.close();
    b!.close();
    redis.disconnect();
  });
});

type Ending = "succeeded" | "release" | "notSent";
type Op =
  | { t: "acquire"; replica: 0 | 1; tokens: number; usedShare: number; ending: Ending }
  | { t: "end"; pick: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant("acquire" as const),
      replica: fc.constantFrom(0 as const, 1 as const),
      tokens: fc.integer({ min: 100, max: 2500 }),
      // Mostly near the estimate (the gateway's estimate includes max_tokens): the provider's
      // bucket is pressed hard, so a fleet that reserved twice would overdraw it.
      usedShare: fc.double({ min: 0.6, max: 1, noNaN: true }),
      ending: fc.constantFrom<Ending>("succeeded", "release", "notSent"),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("end" as const), pick: fc.nat(20) }) },
);

describe("token budgets across a fleet: property", () => {
  test("a provider charging real usage at the grant never sees its bucket overdrawn", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    redis.disconnect();
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 10, maxLength: 30 }), async (ops) => {
        const replicas = await fleet(uniquePrefix());
        // The provider's own meter: same capacity and refill, full from before the first call.
        const provider = new RateBudget("provider", "tokens", TPM, performance.now());
        const aborts = new AbortController();
        const held: { lease: Lease; used: number; ending: Ending }[] = [];
        const pending: Promise<unknown>[] = [];
        let low = Number.POSITIVE_INFINITY;
        for (const op of ops) {
          if (op.t === "acquire") {
            const used = Math.floor(op.tokens * op.usedShare);
            const charged = op.ending === "notSent" ? 0 : op.ending === "release" ? op.tokens : used;
            pending.push(
              replicas[op.replica].gov
                .acquire("chat", { tokens: op.tokens, signal: aborts.signal })
                .then((lease) => {
                  const now = performance.now();
                  provider.take(charged, now);
                  low = Math.min(low, provider.levelAt(now));
                  held.push({ lease, used, ending: op.ending });
                })
                .catch(() => {}),
            );
          } else if (held.length > 0) {
            const [h] = held.splice(op.pick % held.length, 1);
            if (h!.ending === "succeeded") h!.lease.succeeded({ tokens: h!.used });
            else if (h!.ending === "release") h!.lease.release();
            else h!.lease.release({ sent: false });
          }
          await tick();
        }
        aborts.abort();
        await Promise.all(pending);
        for (const h of held) h.lease.release();
        for (const r of replicas) r.gov.close();
        await Promise.all(replicas.map((r) => r.store.close()));
        // A refund is never larger than what the refill has not yet paid back, so the provider's
        // bucket, charged the real usage at each grant, stays at or above zero (1 token of rounding).
        assert.ok(low >= -1, `the provider's bucket went to ${low.toFixed(1)}`);
      }),
      { numRuns: 5, endOnFailure: true },
    );
  });
});
