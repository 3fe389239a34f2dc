/**
 * Peer lesson (async-sema 3.1.1, DEPS.md): releasing twice added capacity. In sluice a lease
 * ends exactly once; every later ending (`release`, `succeeded`, `failed`, dispose, `retry`) is
 * a no-op on every budget: lane, group, key and pod (DESIGN §1, STYLE G3).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Governor, type Lease } from "../../src/index.js";
import { ManualClock } from "../../src/testing.js";
import { flush, track } from "../helpers/index.js";

/** Every ending a caller could call again on a lease that already ended. */
async function endAgainEveryWay(lease: Lease): Promise<void> {
  lease.release();
  lease.succeeded({ tokens: 5 });
  lease.failed({ status: 503 });
  lease.failed({ refused: true });
  lease[Symbol.dispose]();
  await lease[Symbol.asyncDispose]();
  assert.equal(await lease.retry({ refused: true }), false);
}

describe("regress async-sema: releasing twice", () => {
  test("never adds capacity to the lane, the group or the key", async () => {
    const clock = new ManualClock();
    const gov = new Governor({
      clock,
      groups: { g: { limit: 2 } },
      keys: { k1: { maxInflight: 5 } },
      lanes: { L: { limit: 2, reserve: 0, group: "g" } },
    });
    const a = await gov.acquire("L", { key: "k1" });
    await gov.acquire("L", { key: "k1" });
    a.release();
    await endAgainEveryWay(a);
    const c = track(gov.acquire("L", { key: "k1" }));
    const d = track(gov.acquire("L", { key: "k1" }));
    await flush();
    assert.deepEqual([c.settled, d.settled], [true, false], "one slot came back, not more");
    const s = gov.snapshot();
    assert.deepEqual([s.lanes[0]!.inflight, s.lanes[0]!.queued], [2, 1]);
    assert.equal(s.groups[0]!.inflight, 2);
    assert.deepEqual([s.keys[0]!.inflight, s.keys[0]!.queued], [2, 1]);
  });

  test("a verdict after the release neither narrows the pod nor trips its breaker", async () => {
    const clock = new ManualClock();
    const gov = new Governor({
      clock,
      random: () => 0.5,
      lanes: { P: { limit: 4, reserve: 0, pods: [{ id: "p0", maxInflight: 4 }], adaptive: { floor: 1 } } },
    });
    const leases = [await gov.acquire("P"), await gov.acquire("P"), await gov.acquire("P")];
    leases[0]!.succeeded();
    await endAgainEveryWay(leases[0]!);
    const pod = gov.snapshot().pods[0]!;
    assert.deepEqual([pod.width, pod.inflight, pod.breaker], [4, 2, "closed"]);
    assert.equal(gov.isTripped("p0"), false);
    for (const l of leases) l.release();
    assert.equal(gov.snapshot().pods[0]!.inflight, 0);
  });

  test("a refusal counted once is not counted again by a second failed()", async () => {
    const clock = new ManualClock();
    const gov = new Governor({
      clock,
      random: () => 0.5,
      lanes: { P: { limit: 4, reserve: 0, pods: [{ id: "p0", maxInflight: 4 }], adaptive: { floor: 1 } } },
    });
    const leases = [
      await gov.acquire("P"),
      await gov.acquire("P"),
      await gov.acquire("P"),
      await gov.acquire("P"),
    ];
    leases[0]!.failed({ status: 503 }); // 4 in flight at the refusal: width 4 → 2 (DESIGN §1.3)
    const after = gov.snapshot().pods[0]!;
    leases[0]!.failed({ status: 503 });
    assert.deepEqual(gov.snapshot().pods[0], after);
    assert.deepEqual([after.width, after.inflight, after.breaker], [2, 3, "closed"]);
    for (const l of leases) l.release();
  });
});
