/**
 * A pod's own running count (`Governor.reportRunning`, fed by the `metrics_url` poller) bounds its
 * room beside what the Governor counts (issue 22 defect 4): calls the fleet does not count — a
 * replica paused past its lease, a client going straight to the pod — keep their slots until the
 * pod's count shows them ending. ManualClock: freshness and wake-ups are exact.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { flush, make } from "./test-helpers.js";

const POD = "http://pod-a";
const FRESH_MS = 300; // three poll intervals of 100 ms

function pod6() {
  const m = make({ limit: 32, pods: [{ id: POD, maxInflight: 6 }], queueTimeoutMs: 60_000 }, {});
  const pod = () => m.gov.snapshot().pods.find((p) => p.id === POD)!;
  return { ...m, pod };
}

describe("a pod's reported running count", { timeout: 10_000 }, () => {
  test("6 running at the pod refuses a grant though the Governor counts 0; a fresher 3 lets 3 in; a stale report is ignored", async () => {
    const { clock, gov, pod } = pod6();
    gov.reportRunning(POD, 6, FRESH_MS);
    assert.equal(gov.tryAcquire("L"), undefined, "the pod says it is full: no grant");
    assert.equal(pod().inflight, 0);
    assert.equal(pod().reported_running, 6);

    clock.advance(100);
    gov.reportRunning(POD, 3, FRESH_MS);
    const leases = [gov.tryAcquire("L"), gov.tryAcquire("L"), gov.tryAcquire("L")];
    assert.ok(
      leases.every((l) => l !== undefined),
      "3 more fit beside the pod's 3",
    );
    assert.equal(gov.tryAcquire("L"), undefined, "3 + 3 is the pod's 6");

    // Our own calls free their slots as they end, without waiting for a report.
    leases[0]!.release();
    const again = gov.tryAcquire("L");
    assert.ok(again !== undefined, "our own ending frees its slot at once");
    assert.equal(gov.tryAcquire("L"), undefined);

    // Past three intervals the report is stale: only the Governor's count (3) bounds the pod.
    clock.advance(FRESH_MS);
    assert.equal(pod().reported_running, undefined, "a stale report is not shown");
    const more = [gov.tryAcquire("L"), gov.tryAcquire("L"), gov.tryAcquire("L")];
    assert.ok(
      more.every((l) => l !== undefined),
      "a stale report is ignored",
    );
    assert.equal(gov.tryAcquire("L"), undefined, "the width still holds");
  });

  test("a waiter held only by the report is granted when the next report shows room, and when it goes stale", async () => {
    const { clock, gov, pod } = pod6();
    gov.reportRunning(POD, 6, FRESH_MS);
    let granted = 0;
    const waiter = gov.acquire("L").then((l) => {
      granted++;
      return l;
    });
    await flush();
    assert.equal(granted, 0, "queued behind the pod's own 6");

    clock.advance(100);
    gov.reportRunning(POD, 5, FRESH_MS); // one of the pod's calls ended
    await flush();
    assert.equal(granted, 1, "the report that shows room wakes the waiter");
    (await waiter).release();

    // Held by a report that no later report replaces: granted when it goes stale.
    gov.reportRunning(POD, 6, FRESH_MS);
    const second = gov.acquire("L").then((l) => {
      granted++;
      return l;
    });
    clock.advance(FRESH_MS - 1);
    await flush();
    assert.equal(granted, 1, "still fresh: still held");
    clock.advance(1);
    await flush();
    assert.equal(granted, 2, "stale at last: the Governor's count alone has room");
    (await second).release();
    assert.equal(pod().inflight, 0);
  });

  test("an unknown pod's report is ignored", () => {
    const { gov } = pod6();
    assert.doesNotThrow(() => gov.reportRunning("http://nowhere", 99, FRESH_MS));
    assert.ok(gov.tryAcquire("L") !== undefined);
  });
});
