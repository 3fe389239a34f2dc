/**
 * Token budgets while Redis is away, on a private redis-server the test stops (SIGKILL) and starts
 * again: `local` divides each bucket's capacity by the expected replicas and charges what it
 * reserved meanwhile to the fleet's bucket once Redis answers; `closed` refuses with
 * store_unavailable and gives the local reservation back in full.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { StoreUnavailableError } from "../../src/core/errors.js";
import { Governor } from "../../src/governor/governor.js";
import type { OnStoreError } from "../../src/store/redis/redis-store.js";
import { OutageFixture, skipWithoutRedisServer, untilConnected } from "./outage-helpers.js";

const TPM = 6000;
const fixture = new OutageFixture();
after(() => fixture.close());

async function setup(policy: OnStoreError) {
  const { server, store } = await fixture.start(policy);
  const gov = new Governor({
    store,
    lanes: { chat: { limit: 8, reserve: 0, queueLimit: 8, queueTimeoutMs: 60_000, tpm: TPM } },
  });
  const bucket = () => gov.snapshot().lanes[0]!.tokens!;
  return { server, store, gov, bucket };
}

describe("token budgets during a fleet store outage", { timeout: 30_000 }, () => {
  test("local: each bucket keeps capacity ÷ expected replicas, and what it reserved is charged to Redis when it is back", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { server, store, gov, bucket } = await setup("local");
    await server.stop();
    await store.heartbeat(); // the failed round trip enters the outage policy
    assert.equal(store.status().mode, "local");
    assert.equal(bucket().per_minute, TPM / 2, "half the capacity here: 2 replicas expected");
    const lease = await gov.acquire("chat", { tokens: 2500 });
    assert.ok(bucket().available <= 500 + 100, `2500 of the 3000 reserved: ${bucket().available}`);
    lease.release(); // the estimate stays charged (owed to the fleet)

    await server.start(); // empty: the fleet's bucket starts full again
    const back = performance.now();
    await untilConnected(store);
    await store.heartbeat(); // re-reads the fleet's level, after the owed settlement
    const refill = ((performance.now() - back) * TPM) / 60_000;
    assert.equal(bucket().per_minute, TPM, "the configured capacity again");
    const level = bucket().available;
    assert.ok(level >= TPM - 2500 - 1, `the owed 2500 was charged to the fleet's bucket once: ${level}`);
    assert.ok(level <= TPM - 2500 + refill + 1, `and not forgotten: ${level}`);
  });

  test("closed: a call is refused with store_unavailable and its local reservation is given back in full", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { server, gov, bucket } = await setup("closed");
    assert.equal(bucket().available, TPM);
    await server.stop();
    const error = await gov.acquire("chat", { tokens: 2000 }).catch((e) => e);
    assert.ok(error instanceof StoreUnavailableError, String(error));
    assert.equal(bucket().available, TPM, "nothing stays reserved for a call the fleet never took");
    assert.equal(gov.snapshot().lanes[0]!.inflight, 0);
  });
});
