/**
 * Peer lessons (DEPS.md): cockatiel drains with `Array#shift` and p-queue splices an array for
 * priority, both quadratic on a 100k backlog; bottleneck arms a timer per admission. Here 100k
 * waiters of mixed classes queue behind one slot and drain in class order, FIFO within a
 * class, with one timer for the whole queue. There is no timing assertion: a quadratic queue
 * would make this file take minutes instead of well under a second.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Governor, isQueueTimeoutError, type Priority } from "../../src/index.js";
import { ManualClock } from "../../src/testing.js";
import { flush } from "../helpers/index.js";

const N = 100_000;
const CLASSES: readonly Priority[] = ["bulk", "default", "interactive"];

function setup(queueTimeoutMs: number) {
  const clock = new ManualClock();
  const gov = new Governor({
    clock,
    lanes: { L: { limit: 1, reserve: 0, queueLimit: N, queueTimeoutMs, agingMs: 3_600_000 } },
  });
  return { clock, gov };
}

describe("regress cockatiel: a 100k backlog", () => {
  test("drains in class order, FIFO within a class, with one timer", async () => {
    const { clock, gov } = setup(3_600_000);
    const held = await gov.acquire("L");
    const order: number[] = [];
    let resolveAll: () => void = () => {};
    const all = new Promise<void>((resolve) => {
      resolveAll = resolve;
    });
    for (let i = 0; i < N; i++) {
      gov.acquire("L", { priority: CLASSES[i % 3]! }).then((lease) => {
        order.push(i);
        // Each grant ends at once: its release grants the next waiter.
        lease.release();
        if (order.length === N) resolveAll();
      });
    }
    assert.equal(gov.snapshot().lanes[0]!.queued, N);
    assert.equal(clock.pendingTimers, 1, "one timer for the whole queue, not one per admission");
    held.release();
    await all;
    const expected = [2, 1, 0].flatMap((c) =>
      Array.from({ length: N / 3 + (c < N % 3 ? 1 : 0) }, (_, k) => 3 * k + c),
    );
    assert.equal(order.length, expected.length);
    assert.deepEqual(order, expected);
    assert.deepEqual([gov.snapshot().lanes[0]!.inflight, gov.snapshot().lanes[0]!.queued], [0, 0]);
  });

  test("times out all at once and leaves nothing behind", async () => {
    // A quarter of the backlog: each timeout builds an error with a message (~8 µs), linear.
    const n = N / 4;
    const { clock, gov } = setup(1000);
    const held = await gov.acquire("L");
    let timedOut = 0;
    for (let i = 0; i < n; i++)
      gov.acquire("L", { priority: CLASSES[i % 3]! }).catch((e) => {
        if (isQueueTimeoutError(e)) timedOut++;
      });
    clock.advance(1000);
    await flush();
    assert.equal(timedOut, n);
    held.release();
    assert.deepEqual([gov.snapshot().lanes[0]!.inflight, gov.snapshot().lanes[0]!.queued], [0, 0]);
    assert.equal(clock.pendingTimers, 0);
  });
});
