/**
 * A Redis that stops answering without closing the connection — a stalled server, or a partition
 * that drops packets instead of resetting them — must start the outage policy like a Redis that
 * went away: a grant waiting for its answer fails over within one heartbeat's interval (at least
 * MIN_COMMAND_TIMEOUT_MS) instead of waiting forever. The store reaches its private redis-server
 * through a TCP proxy that the test makes stop forwarding (`hold()`: connections stay open).
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { Governor } from "../../src/governor/governor.js";
import { MIN_COMMAND_TIMEOUT_MS } from "../../src/store/redis/connection.js";
import { OutageFixture, skipWithoutRedisServer } from "./outage-helpers.js";

const fixture = new OutageFixture();
after(() => fixture.close());

/** A short lease: the command timeout is then its floor, MIN_COMMAND_TIMEOUT_MS. */
const TTL_MS = 3000;

describe("a stalled Redis", { timeout: 60_000 }, () => {
  test("a grant waiting on a Redis that stopped answering falls back to the local share within the command timeout", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { proxy, store } = await fixture.startBehindProxy("local", TTL_MS);
    const gov = new Governor({
      store,
      lanes: { chat: { limit: 8, reserve: 0, queueLimit: 8, queueTimeoutMs: 60_000 } },
    });
    (await gov.acquire("chat")).release(); // the scripts are loaded: what follows is the stall alone
    proxy.hold();
    const asked = performance.now();
    const lease = await gov.acquire("chat");
    const tookMs = performance.now() - asked;
    assert.equal(store.status().mode, "local", "the stall started the outage policy");
    // Without a timeout the grant never comes (the queue timeout is a minute away); the bound
    // is the timeout plus a loaded machine's delays, far below the queue timeout.
    assert.ok(tookMs >= MIN_COMMAND_TIMEOUT_MS - 50, `not before the timeout: ${tookMs.toFixed(0)} ms`);
    assert.ok(tookMs < 30_000, `granted from the local share after ${tookMs.toFixed(0)} ms`);
    lease.release();
    gov.close();
  });
});
