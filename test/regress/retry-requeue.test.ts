/**
 * Found by the property suite (pod lane), fixed in 8f36e3a: when `lease.retry()` finds no other
 * pod, the call gives back its lane slot and waits again at its first arrival's place (DESIGN
 * §1.3). That wait skipped two rules every other wait keeps:
 *  - the queue bound: it was pushed even when the queue was already at `queueLimit`;
 *  - the call's AbortSignal (STYLE G9): the abort listener was removed at the first grant, so an
 *    abort left it waiting until its queue timeout.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Governor } from "../../src/index.js";
import { ManualClock } from "../../src/testing.js";
import { flush, track } from "../helpers/index.js";

/** A lane of two one-slot pods with re-dispatch budget to spend (ten successes earn one). */
async function setup() {
  const clock = new ManualClock();
  const gov = new Governor({
    clock,
    random: () => 0.5,
    lanes: {
      P: {
        limit: 2,
        reserve: 0,
        queueLimit: 1,
        queueTimeoutMs: 1000,
        pods: [
          { id: "p0", maxInflight: 1 },
          { id: "p1", maxInflight: 1 },
        ],
        adaptive: { floor: 1 },
      },
    },
  });
  for (let i = 0; i < 10; i++) (await gov.acquire("P")).succeeded();
  return { clock, gov };
}

describe("regress: a re-dispatch that waits again", () => {
  test("keeps the lane's queue bound", async () => {
    const { gov } = await setup();
    const l1 = await gov.acquire("P");
    await gov.acquire("P");
    const waiter = gov.acquire("P"); // the queue (limit 1) is now full
    waiter.catch(() => {});
    // p0 refuses; p1 is busy: the call waits again (p0's breaker opened on the refusal).
    const retried = track(l1.retry({ refused: true }));
    await flush();
    assert.equal(retried.settled, false);
    const lane = gov.snapshot().lanes[0]!;
    assert.ok(lane.queued <= lane.queue_limit, `${lane.queued} queued > queue limit ${lane.queue_limit}`);
  });

  test("is removed by the call's AbortSignal", async () => {
    const { gov } = await setup();
    const ac = new AbortController();
    const l1 = await gov.acquire("P", { signal: ac.signal });
    await gov.acquire("P");
    const retried = l1.retry({ refused: true });
    retried.catch(() => {});
    await flush();
    assert.equal(gov.snapshot().lanes[0]!.queued, 1);
    const reason = new Error("client went away");
    ac.abort(reason);
    await flush();
    assert.equal(gov.snapshot().lanes[0]!.queued, 0, "the abort removed the waiting retry");
    await assert.rejects(retried, (e) => e === reason);
  });

  test("is given up by release(): the retry rejects and nothing is left waiting", async () => {
    const { gov } = await setup();
    const l1 = await gov.acquire("P");
    const l2 = await gov.acquire("P");
    const retried = l1.retry({ refused: true }); // p0 refused, p1 busy: waits again
    retried.catch(() => {});
    await flush();
    assert.equal(gov.snapshot().lanes[0]!.queued, 1);
    l1.release();
    await assert.rejects(retried, /released while its re-dispatch waited/);
    assert.deepEqual([gov.snapshot().lanes[0]!.queued, gov.snapshot().lanes[0]!.inflight], [0, 1]);
    l2.release();
    assert.equal(gov.snapshot().lanes[0]!.inflight, 0);
  });
});
