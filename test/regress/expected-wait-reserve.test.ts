/**
 * Found by the property suite (check 6), fixed in 8f36e3a: two refusals on arrival ignored that
 * an interactive call may take a free reserved slot at once while non-interactive calls wait
 * (DESIGN §1.1).
 *  - "Say no at once" estimated the wait from the caller's position and the drain rate: with a
 *    slow drain, the interactive call was refused (`expected_wait`) although the reserve was free.
 *  - `wait: false` granted only when nobody waited in the lane, so it refused (`no_wait`) the
 *    same interactive call that a plain `acquire` grants at once.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Governor, type Lease } from "../../src/index.js";
import { ManualClock } from "../../src/testing.js";

describe("regress: an interactive arrival that finds the reserve free", () => {
  test("an interactive arrival that finds the reserve free is granted, not refused as expected_wait", async () => {
    const clock = new ManualClock();
    const gov = new Governor({
      clock,
      lanes: { L: { limit: 3, reserve: 1, queueLimit: 10, queueTimeoutMs: 10_000 } },
    });
    // Three 40 s holds, then two instant ones: mean hold (EWMA, α 0.1) 32.4 s over 5 samples.
    const slow = [
      await gov.acquire("L"),
      await gov.acquire("L"),
      await gov.acquire("L", { priority: "interactive" }),
    ];
    clock.advance(40_000);
    for (const l of slow) l.release();
    const d1 = await gov.acquire("L");
    const d2 = await gov.acquire("L"); // 2 = limit − reserve: non-interactive calls now wait
    const i1 = await gov.acquire("L", { priority: "interactive" });
    const bulk = gov.acquire("L", { priority: "bulk" }); // queued (4 samples: no estimate yet)
    bulk.catch(() => {});
    i1.release(); // sample 4; the free slot is the reserve, so the bulk call keeps waiting
    (await gov.acquire("L", { priority: "interactive" })).release(); // sample 5
    const lane = gov.snapshot().lanes[0]!;
    assert.deepEqual([lane.inflight, lane.limit, lane.reserve, lane.queued], [2, 3, 1, 1]);

    // Expected wait = position 1 × 32.4 s ÷ width 3 = 10.8 s > 10 s timeout — but the reserve
    // slot is free right now and this call may take it.
    let lease: Lease | undefined;
    try {
      lease = await gov.acquire("L", { priority: "interactive" });
    } catch (error) {
      assert.fail(`refused with a free reserved slot: ${(error as Error).message}`);
    }
    assert.equal(gov.snapshot().lanes[0]!.inflight, 3);
    lease.release();
    d1.release();
    d2.release();
  });

  test("is granted with wait: false, as a waiting acquire would be at once", async () => {
    const gov = new Governor({ clock: new ManualClock(), lanes: { L: { limit: 2, reserve: 1 } } });
    const held = await gov.acquire("L");
    const bulk = gov.acquire("L", { priority: "bulk" }); // waits: only the reserve is left
    bulk.catch(() => {});
    let lease: Lease | undefined;
    try {
      lease = await gov.acquire("L", { priority: "interactive", wait: false });
    } catch (error) {
      assert.fail(`refused with a free reserved slot: ${(error as Error).message}`);
    }
    assert.equal(gov.snapshot().lanes[0]!.inflight, 2);
    lease.release();
    held.release();
  });
});
