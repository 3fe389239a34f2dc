/**
 * The library's `breaker: { enabled: false }` (issue 8 item 11, seed 001's switch): a pod whose
 * every call fails with an overload status is never isolated. Each acquire is granted there at
 * once, within its width, and the adaptive width still narrows on the refusals. The same pod with
 * the default breaker is open after its first refusal and grants nothing.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { acquireNow, pods, rig } from "./helpers.js";

describe("breaker: { enabled: false } (library)", () => {
  test("a pod failing every call keeps getting calls; its width still narrows to the floor", async () => {
    const r = rig({
      limit: 8,
      reserve: 0,
      pods: pods(1, 8),
      adaptive: { floor: 1 },
      breaker: { enabled: false },
    });
    for (let i = 0; i < 20; i++) {
      const [lease] = await acquireNow(r.gov, 1); // throws if the pod did not grant at once
      lease!.failed({ status: 503 });
    }
    const p = r.pod("p0");
    assert.equal(p.breaker, "closed");
    assert.equal(r.gov.isTripped("p0"), false);
    assert.equal(p.width, 1, "narrowed to its floor");
    const [again] = await acquireNow(r.gov, 1);
    again!.succeeded();
    assert.equal(r.gov.snapshot().lanes[0]!.inflight, 0);
  });

  test("the same pod with the default breaker is isolated after its first refusal", async () => {
    const r = rig({ limit: 8, reserve: 0, pods: pods(1, 8), adaptive: { floor: 1 } });
    const [lease] = await acquireNow(r.gov, 1);
    lease!.failed({ status: 503 });
    // With adaptive width the first refusal only cuts; the one after the cut opens it.
    const [second] = await acquireNow(r.gov, 1);
    second!.failed({ status: 503 });
    assert.equal(r.pod("p0").breaker, "open");
    await assert.rejects(acquireNow(r.gov, 1), /not granted at once/);
  });
});
