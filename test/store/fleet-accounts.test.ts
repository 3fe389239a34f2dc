/**
 * Provider accounts across a fleet: two (or three) Governors, each with its own RedisStore on one
 * prefix. A quota answer seen by one replica pauses the account on every replica until the reset
 * (a waiter elsewhere is granted only once the pause has expired in Redis, a new arrival elsewhere
 * is refused at once, a replica started later finds the pause in Redis); the account's in-flight
 * cap holds fleet-wide, and a cut of its adaptive cap on one replica applies on the other.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { isQuotaPausedError, type QuotaPausedError } from "../../src/core/errors.js";
import type { Lease } from "../../src/core/lease.js";
import type { GovernorOptions } from "../../src/core/options.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const stores: RedisStore[] = [];
const governors: Governor[] = [];
after(async () => {
  for (const g of governors) g.close();
  await Promise.all(stores.map((s) => s.close()));
});

type Account = NonNullable<GovernorOptions["accounts"]>[string];

function optionsFor(account: Account): GovernorOptions {
  return {
    accounts: { prod: account },
    lanes: {
      A: {
        account: "prod",
        limit: 50,
        reserve: 0,
        queueLimit: 50,
        queueTimeoutMs: 60_000,
        pods: [{ id: "http://pa:1", maxInflight: 50 }],
        adaptive: false,
      },
    },
  };
}

async function replica(prefix: string, name: string, options: GovernorOptions) {
  const store = new RedisStore({ url: REDIS_URL, prefix, replica: name });
  stores.push(store);
  await store.start();
  const gov = new Governor({ ...options, store });
  governors.push(gov);
  return { store, gov, account: () => gov.snapshot().accounts[0]! };
}

const tick = () => new Promise((r) => setTimeout(r, 20));
async function until(what: string, ok: () => boolean) {
  for (let i = 0; i < 250 && !ok(); i++) await tick();
  assert.ok(ok(), `timed out waiting for ${what}`);
}

describe("accounts across a fleet", () => {
  test("a quota answer on one replica pauses the account on every replica until the reset", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    const prefix = uniquePrefix();
    const options = optionsFor({ maxInflight: 1, maxQuotaPauseMs: 60_000 });
    const a = await replica(prefix, "a", options);
    const b = await replica(prefix, "b", options);
    const held = await a.gov.acquire("A");
    let bGranted: Lease | undefined;
    const waiting = b.gov.acquire("A").then((l) => {
      bGranted = l;
      return l;
    });
    await b.store.heartbeat();
    for (let i = 0; i < 5; i++) await tick();
    assert.equal(bGranted, undefined, "the account's one slot is held on a: b waits (cap fleet-wide)");

    held.failed({ status: 429, headers: { "retry-after-ms": "1500" } }); // the provider's quota answer
    const pauseKey = `{${prefix}}:q:account:prod`;
    for (let i = 0; i < 50 && (await redis.pttl(pauseKey)) <= 0; i++) await tick();
    assert.ok((await redis.pttl(pauseKey)) > 0, "the pause is a key in Redis");
    await until("b adopts the pause", () => b.account().quota_paused_s > 0);
    const refused = (await b.gov.acquire("A").catch((e) => e)) as QuotaPausedError;
    assert.ok(isQuotaPausedError(refused), "a new arrival on b is refused at once while paused");
    assert.equal(refused.account, "prod");

    // A replica started during the pause finds it in Redis at its first grant.
    const c = await replica(prefix, "c", options);
    let cGranted: Lease | undefined;
    const cWaiting = c.gov.acquire("A").then((l) => {
      cGranted = l;
      return l;
    });
    await until("c learns the pause from Redis", () => c.account().quota_paused_s > 0);
    assert.ok((await redis.pttl(pauseKey)) > 0, "c learnt it while it lasted");

    // b's waiter and c's are granted only once Redis has let the pause expire (one at a time:
    // the account's cap of 1 holds fleet-wide).
    let left = await redis.pttl(pauseKey);
    while (bGranted === undefined && cGranted === undefined) {
      // Read the grant state first: a grant seen now was confirmed before the next PTTL is read.
      const grantedBefore = bGranted !== undefined || cGranted !== undefined;
      left = await redis.pttl(pauseKey);
      assert.ok(!grantedBefore || left <= 0, "nothing is granted while the pause key lives");
      await tick();
    }
    assert.ok((await redis.pttl(pauseKey)) <= 0, "granted after the pause expired in Redis");
    const first = bGranted ?? cGranted!;
    first.release();
    await until(
      "the other waiter granted after the first release",
      () => bGranted !== undefined && cGranted !== undefined,
    );
    (await (first === bGranted ? cWaiting : waiting)).release();
    redis.disconnect();
  });

  test("a cut of the account's adaptive cap on one replica applies on the other", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    redis.disconnect();
    const prefix = uniquePrefix();
    const options = optionsFor({ maxInflight: 8, adaptive: { floor: 2 } });
    const a = await replica(prefix, "a", options);
    const b = await replica(prefix, "b", options);
    const onA = await Promise.all(Array.from({ length: 4 }, () => a.gov.acquire("A")));
    const onB = await Promise.all(Array.from({ length: 4 }, () => b.gov.acquire("A")));
    let ninth: Lease | undefined;
    void b.gov.acquire("A").then((l) => {
      ninth = l;
    });
    await a.store.heartbeat();
    await b.store.heartbeat();
    for (let i = 0; i < 5; i++) await tick();
    assert.equal(ninth, undefined, "8 in flight across both replicas: the account's cap holds fleet-wide");
    assert.deepEqual(
      { inflight: b.account().inflight, fleet: b.account().fleet_inflight },
      { inflight: 4, fleet: 8 },
      "the snapshot shows this replica's calls and the fleet's",
    );

    onA.pop()!.failed({ status: 429 }); // throttled without a reset: congestion, the cap is cut
    assert.equal(a.account().adaptive_cap, 4, "halved from the 8 the fleet held");
    await until("b adopts the cut", () => b.account().adaptive_cap === 4);
    for (const l of onA) l.release(); // the fleet holds b's 4: at the new cap
    await b.store.heartbeat();
    for (let i = 0; i < 5; i++) await tick();
    assert.equal(ninth, undefined, "4 in flight on b against the cut cap of 4: still waiting");
    onB.pop()!.release();
    await until("b's waiter granted once the fleet is under the cut cap", () => ninth !== undefined);
    for (const l of [...onB, ninth!]) l.release();
  });
});
