/**
 * Redis going away under a fleet store, each policy (`on_store_error`), on a private redis-server
 * that the test stops (SIGKILL) and starts again: `closed` refuses new calls with
 * StoreUnavailableError at once; `local` goes on with each limit divided by the expected replicas;
 * `open` drops the fleet bound; and when Redis is back the next heartbeat makes the counts exact.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { StoreUnavailableError } from "../../src/core/errors.js";
import type { Lease } from "../../src/core/lease.js";
import { Governor } from "../../src/governor/governor.js";
import type { OnStoreError } from "../../src/store/redis/redis-store.js";
import { OutageFixture, skipWithoutRedisServer, untilConnected } from "./outage-helpers.js";

const fixture = new OutageFixture();
after(() => fixture.close());

async function setup(policy: OnStoreError) {
  const { server, store } = await fixture.start(policy);
  const gov = new Governor({
    store,
    lanes: { chat: { limit: 4, reserve: 0, queueLimit: 8, queueTimeoutMs: 2000 } },
  });
  return { server, store, gov };
}

const settled = async (p: Promise<Lease>, ms = 1500) =>
  Promise.race([
    p.then(
      (l) => ({ lease: l }),
      (error: unknown) => ({ error }),
    ),
    new Promise<{ pending: true }>((r) => setTimeout(() => r({ pending: true }), ms)),
  ]);

describe("fleet store outage", { timeout: 30_000 }, () => {
  test("closed: a new call is refused at once with store_unavailable while Redis is down, and served when it is back", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { server, store, gov } = await setup("closed");
    (await gov.acquire("chat")).release();
    let errors = 0;
    store.onError(() => errors++); // what feeds sluice_store_errors_total in the gateway
    await server.stop();
    const refused = await settled(gov.acquire("chat"));
    assert.ok("error" in refused && refused.error instanceof StoreUnavailableError, JSON.stringify(refused));
    assert.equal(store.status().mode, "closed");
    assert.ok(errors >= 1, "the failed round trip was counted");
    await server.start();
    await untilConnected(store);
    const served = await settled(gov.acquire("chat"));
    assert.ok("lease" in served, "served again once Redis is back");
    served.lease.release();
  });

  test("local: each limit is divided by the expected replicas and calls go on", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { server, store, gov } = await setup("local");
    await server.stop();
    const held: Lease[] = [];
    const first = await settled(gov.acquire("chat"));
    assert.ok("lease" in first, "served in local mode");
    held.push(first.lease);
    assert.equal(store.status().mode, "local");
    const second = await settled(gov.acquire("chat"));
    assert.ok("lease" in second);
    held.push(second.lease);
    const waiting = gov.acquire("chat");
    const third = await settled(waiting, 300);
    assert.ok("pending" in third, "4 ÷ 2 replicas = 2 here while Redis is down");
    const down = gov.snapshot();
    assert.equal(down.store?.mode, "local");
    const lane = down.lanes.find((l) => l.lane === "chat")!;
    assert.equal(lane.inflight, 2);
    assert.equal(
      lane.fleet_inflight,
      undefined,
      "no fleet count while Redis is down (the local share is not a count of the fleet)",
    );
    for (const l of held) l.release();
    (await waiting).release(); // granted from the local share once the two above were released
    await server.start();
    await untilConnected(store);
    const back = await Promise.all([1, 2, 3, 4].map(() => gov.acquire("chat")));
    assert.equal(back.length, 4, "the whole limit again once Redis is back");
    for (const l of back) l.release();
  });

  test("open: the fleet bound is dropped while Redis is down (the lane's own limit still holds)", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { server, store, gov } = await setup("open");
    await server.stop();
    const leases = await Promise.all([1, 2, 3, 4].map(() => gov.acquire("chat")));
    assert.equal(leases.length, 4);
    assert.equal(store.status().mode, "open");
    for (const l of leases) l.release();
    await server.start();
  });
});
