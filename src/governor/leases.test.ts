/** Governor leases, run() and stream(): a slot held for a call or a whole stream, released once. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "../core/clock.js";
import { QueueTimeoutError } from "../core/errors.js";
import { Governor } from "./governor.js";
import { flush, make } from "./test-helpers.js";

describe("Governor: leases", () => {
  test("release is idempotent and never adds capacity", async () => {
    const { gov, lane } = make({ limit: 1 });
    const a = await gov.acquire("L");
    a.release();
    a.release();
    a.succeeded();
    const b = await gov.acquire("L");
    const c = gov.acquire("L");
    a.release();
    assert.equal(lane().inflight, 1);
    b.release();
    (await c).release();
    assert.equal(lane().inflight, 0);
  });

  test("a lease is a value, not a thenable: a waiter's promise and Promise.resolve give the lease itself", async () => {
    const { gov } = make({ limit: 1 });
    const first = await gov.acquire("L");
    const waiting = gov.acquire("L");
    first.release();
    const lease = await waiting; // resolved by the grant, with the ticket (its `then` is undefined)
    assert.equal(typeof (lease as { then?: unknown }).then, "undefined");
    assert.equal(await Promise.resolve(lease), lease);
    assert.equal(await Promise.all([lease]).then(([l]) => l), lease);
    assert.equal(lease.lane, "L");
    lease.release();
  });

  test("`await using` releases at the end of the block", async () => {
    const { gov, lane } = make({ limit: 1 });
    {
      await using lease = await gov.acquire("L");
      assert.equal(lease.lane, "L");
      assert.equal(lane().inflight, 1);
    }
    assert.equal(lane().inflight, 0);
  });

  test("run() releases on success and on failure", async () => {
    const { gov, lane } = make({ limit: 1 });
    assert.equal(await gov.run("L", async () => 42), 42);
    await assert.rejects(
      gov.run("L", async () => Promise.reject(new Error("boom"))),
      /boom/,
    );
    assert.equal(lane().inflight, 0);
  });
});

describe("Governor: stream", () => {
  async function* items(n: number, failAt = -1) {
    for (let i = 0; i < n; i++) {
      if (i === failAt) throw Object.assign(new Error("reset"), { code: "ECONNRESET" });
      yield i;
    }
  }

  test("holds the slot for the whole stream and releases when it is exhausted", async () => {
    const { gov, lane } = make({ limit: 1 });
    const seen: number[] = [];
    for await (const x of gov.stream("L", () => items(3))) {
      seen.push(x);
      assert.equal(lane().inflight, 1);
    }
    assert.deepEqual(seen, [0, 1, 2]);
    assert.equal(lane().inflight, 0);
  });

  test("releases when the consumer stops early", async () => {
    const { gov, lane } = make({ limit: 1 });
    for await (const x of gov.stream("L", () => items(10))) if (x === 1) break;
    assert.equal(lane().inflight, 0);
  });

  test("a failure before any item reconnects keeping the arrival time; after an item it does not", async () => {
    const clock = new ManualClock();
    const gov = new Governor({ clock, lanes: { L: { limit: 1 } } });
    const arrivals: number[] = [];
    let calls = 0;
    const it = gov
      .stream(
        "L",
        ({ lease }) => {
          calls++;
          arrivals.push(lease.queuedMs);
          return items(2, calls === 1 ? 0 : -1);
        },
        { backoffMs: 10 },
      )
      [Symbol.asyncIterator]();
    const first = it.next();
    await flush();
    assert.equal(gov.snapshot().lanes[0]!.inflight, 0, "released before the backoff");
    clock.advance(20);
    assert.deepEqual(await first, { value: 0, done: false });
    assert.equal(calls, 2);
    await it.return?.();
    let n = 0;
    await assert.rejects(async () => {
      for await (const _ of gov.stream("L", () => items(3, 1))) n++;
    }, /reset/);
    assert.equal(n, 1);
    assert.equal(gov.snapshot().lanes[0]!.inflight, 0);
  });

  test("a queue timeout is never retried", async () => {
    const { gov, clock } = make({ limit: 1, queueTimeoutMs: 1000 });
    const held = await gov.acquire("L");
    let calls = 0;
    const consumed = (async () => {
      const factory = () => {
        calls++;
        return items(1);
      };
      for await (const _ of gov.stream("L", factory)) {
      }
    })();
    clock.advance(1000);
    await assert.rejects(consumed, QueueTimeoutError);
    assert.equal(calls, 0);
    held.release();
  });
});
