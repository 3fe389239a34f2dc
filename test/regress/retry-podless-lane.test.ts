/**
 * Found reading lease.ts against scheduler.ts, fixed in 8f36e3a: `Lease.retry()` is documented to
 * resolve false with the lease released, but on a lane without pods it resolved false and kept
 * the slot. A caller that trusts the contract never releases, and the slot was lost for good
 * (lane, group and key).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Governor } from "../../src/index.js";
import { ManualClock } from "../../src/testing.js";
import { flush, track } from "../helpers/index.js";

describe("regress: retry() on a lane without pods", () => {
  test("resolves false and releases the lease, as documented", async () => {
    const gov = new Governor({
      clock: new ManualClock(),
      groups: { g: { limit: 4 } },
      keys: { k1: { maxInflight: 2 } },
      lanes: { L: { limit: 1, reserve: 0, group: "g" } },
    });
    const lease = await gov.acquire("L", { key: "k1" });
    assert.equal(await lease.retry({ refused: true }), false);
    const next = track(gov.acquire("L", { key: "k1" }));
    await flush();
    const s = gov.snapshot();
    assert.equal(next.settled, true, "the slot came back and the next caller got it");
    assert.deepEqual([s.lanes[0]!.inflight, s.groups[0]!.inflight, s.keys[0]!.inflight], [1, 1, 1]);
  });
});
