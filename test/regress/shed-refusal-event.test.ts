/**
 * `onRefusal` is documented as "sluice refused a call (queue full, shed, key limit, queue
 * timeout)". The first Governor rejected a waiter shed for a higher class (DESIGN §1.1) without
 * the event, so refusal metrics and logs missed every shed (fixed in d1b9f5d); this pins it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Governor, isQueueFullError, type RefusalEvent } from "../../src/index.js";
import { ManualClock } from "../../src/testing.js";

describe("regress: shed waiters and onRefusal", () => {
  test("a full queue refusal is reported on onRefusal", async () => {
    const gov = new Governor({
      clock: new ManualClock(),
      lanes: { L: { limit: 1, reserve: 0, queueLimit: 1 } },
    });
    const seen: RefusalEvent[] = [];
    gov.onRefusal((e) => seen.push(e));
    const held = await gov.acquire("L");
    const waiting = gov.acquire("L");
    await assert.rejects(gov.acquire("L"), (e) => isQueueFullError(e) && e.reason === "full");
    assert.deepEqual(
      seen.map((e) => [e.lane, e.error.code]),
      [["L", "queue_full"]],
    );
    held.release();
    (await waiting).release();
  });

  test("a waiter shed for a higher class is reported on onRefusal, once", async () => {
    const gov = new Governor({
      clock: new ManualClock(),
      lanes: { L: { limit: 1, reserve: 0, queueLimit: 1 } },
    });
    const seen: RefusalEvent[] = [];
    gov.onRefusal((e) => seen.push(e));
    const held = await gov.acquire("L");
    const bulk = gov.acquire("L", { priority: "bulk" });
    const interactive = gov.acquire("L", { priority: "interactive" });
    await assert.rejects(bulk, (e) => isQueueFullError(e) && e.reason === "shed");
    held.release();
    (await interactive).release();
    assert.deepEqual(
      seen.map((e) => [e.lane, e.error.code, (e.error as { reason?: string }).reason]),
      [["L", "queue_full", "shed"]],
    );
  });
});
