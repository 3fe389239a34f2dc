/**
 * Closing a fleet store with work in flight while Redis is out of reach, or just coming back:
 * grants waiting for an answer, releases batched for the turn's write, a heartbeat under way.
 * Nothing may reject unhandled afterwards — a gateway runs with Node's default
 * `--unhandled-rejections=throw`, so one would crash it at shutdown.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { Lease } from "../../src/core/lease.js";
import { Governor } from "../../src/governor/governor.js";
import type { OnStoreError } from "../../src/store/redis/redis-store.js";
import { OutageFixture, skipWithoutRedisServer } from "./outage-helpers.js";

const fixture = new OutageFixture();
after(() => fixture.close());

const unhandled: unknown[] = [];
const record = (reason: unknown) => unhandled.push(reason);
process.on("unhandledRejection", record);
after(() => process.off("unhandledRejection", record));

const turns = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Delays between Redis coming back and the close: before, during and after ioredis reconnects. */
const CLOSE_AFTER_MS = [-1, 0, 5, 20, 60, 150];

describe("closing a fleet store during an outage", { timeout: 120_000 }, () => {
  test("closed as its connection comes back, before Redis answered the subscriber's SUBSCRIBE", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { proxy, store } = await fixture.startBehindProxy("local", 60_000);
    const resubscribed = proxy.loseRequest(/subscribe/i);
    proxy.drop(); // both connections: ioredis reconnects at once and subscribes again
    await resubscribed;
    await store.close();
    await turns(100); // the lost SUBSCRIBE is rejected as the connection closes
    assert.deepEqual(
      unhandled.map((e) => String(e)),
      [],
      "the SUBSCRIBE that never got its answer",
    );
  });

  for (const policy of ["local", "open", "closed"] as OnStoreError[]) {
    test(`${policy}: no unhandled rejection after close, whatever was in flight`, async (t) => {
      if (skipWithoutRedisServer(t)) return;
      for (const delay of CLOSE_AFTER_MS) {
        const { proxy, store } = await fixture.startBehindProxy(policy, 600); // a heartbeat every 200 ms
        const gov = new Governor({
          store,
          lanes: { chat: { limit: 2, reserve: 0, queueLimit: 8, queueTimeoutMs: 60_000 } },
        });
        const held: Lease[] = await Promise.all([gov.acquire("chat"), gov.acquire("chat")]);
        const waiters = [gov.acquire("chat"), gov.acquire("chat")].map((p) =>
          p.then(
            (l) => l.release(),
            () => {},
          ),
        );
        await proxy.cut();
        held.pop()!.release(); // a waiter's grant goes to Redis; the release is batched
        void store.heartbeat();
        if (delay >= 0) {
          await proxy.restore();
          await turns(delay);
        }
        held.pop()!.release(); // batched in the turn close() runs in
        const heartbeat = store.heartbeat();
        await store.close();
        gov.close();
        await heartbeat;
        await proxy.restore();
        await Promise.race([Promise.all(waiters), turns(300)]); // ioredis's timers and answers after close
        assert.deepEqual(
          unhandled.map((e) => String(e)),
          [],
          `closed ${delay < 0 ? "while Redis was away" : `${delay} ms after Redis came back`}`,
        );
      }
    });
  }
});
