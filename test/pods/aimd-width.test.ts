/**
 * Adaptive pod width (DESIGN §1.3) with seed 000's production numbers: ceiling 64, 58 in flight
 * at the refusal, width 29; floor 4; one cut per congestion event; +1 per `width` successes
 * while the pod is actually used; inert where nothing refuses.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Lease } from "../../src/core/lease.js";
import { flush } from "../helpers/index.js";
import { acquireNow, LANE, pods, rig, watch } from "./helpers.js";

/** One pod of ceiling 64 (seed 000), floor 4, a lane wide enough never to be the limit. */
const seed000 = () => rig({ limit: 256, reserve: 0, pods: pods(1, 64), adaptive: { floor: 4 } });

/** Keeps the pod full: ends the oldest lease as a success and refills to the width. */
async function fullRoundTrips(
  r: ReturnType<typeof seed000>,
  held: Lease[],
  successes: number,
  onEach?: () => void,
): Promise<void> {
  for (let i = 0; i < successes; i++) {
    held.shift()!.succeeded();
    while (r.pod("p0").inflight < r.pod("p0").width) held.push(...(await acquireNow(r.gov, 1)));
    onEach?.();
  }
}

describe("adaptive pod width (seed 000)", () => {
  test("a refusal with 58 in flight on a pod of ceiling 64 cuts its width to 29", async () => {
    const r = seed000();
    assert.equal(r.pod("p0").width, 64, "starts at the operator's ceiling");
    const leases = await acquireNow(r.gov, 58);
    assert.equal(r.pod("p0").inflight, 58);
    leases[57]!.failed({ status: 503 });
    assert.equal(r.gov.snapshot().pods[0]!.width, 29);
    assert.equal(r.pod("p0").breaker, "closed", "the first refusal of an event only cuts");
  });

  test("a burst of 30 refusals of calls granted before the cut leaves the width at 29", async () => {
    const r = seed000();
    const leases = await acquireNow(r.gov, 58);
    const widths: number[] = [];
    r.gov.onWidthChange((e) => widths.push(e.width));
    for (const lease of leases.slice(0, 31)) lease.failed({ status: 503 });
    assert.equal(r.pod("p0").width, 29);
    assert.deepEqual(widths, [29], "one cut per congestion event");
    assert.equal(
      r.pod("p0").breaker,
      "closed",
      "refusals from the same event are not counted by the breaker",
    );
  });

  test("a refusal with 5 in flight cuts to the floor of 4, not to 2", async () => {
    const r = seed000();
    const leases = await acquireNow(r.gov, 5);
    leases[0]!.failed({ refused: true });
    assert.equal(r.pod("p0").width, 4);
  });

  test("full-width round trips walk the width back to the ceiling one slot at a time, never above it", async () => {
    const r = seed000();
    const held = await acquireNow(r.gov, 58);
    held.pop()!.failed({ status: 503 });
    assert.equal(r.pod("p0").width, 29);
    const steps: number[] = [];
    let last = 29;
    r.gov.onWidthChange((e) => {
      steps.push(e.width - last);
      last = e.width;
    });
    // +1 per `width` successes: 29 + 30 + … + 56 = 1,190 successes from 29 to 57; the steps
    // that reach the breaking point (58 in flight at the refusal) take PROBE_RTTS round trips
    // each: 8 × (57 + 58) = 920 more to 59; past it the pod has proved it carries more, and
    // 59 + … + 63 = 305 walk it to 64. About 2,415 in all.
    let successes = 0;
    while (r.pod("p0").width < 64) {
      await fullRoundTrips(r, held, 1);
      successes++;
      assert.ok(successes < 3_000, `still ${r.pod("p0").width} after ${successes} successes`);
    }
    assert.ok(successes >= 2_000, `reached the ceiling after only ${successes} successes`);
    assert.ok(
      steps.every((s) => s === 1),
      `grows one slot at a time: ${steps.join(",")}`,
    );
    await fullRoundTrips(r, held, 500, () => assert.ok(r.pod("p0").width <= 64));
    assert.equal(r.pod("p0").width, 64);
    assert.equal(r.pod("p0").inflight, 64);
  });

  test("successes at low in-flight (an idle pod) do not grow the width", async () => {
    const r = seed000();
    const leases = await acquireNow(r.gov, 58);
    leases[57]!.failed({ status: 503 });
    for (const lease of leases) lease.release(); // no verdict: ends the event's calls quietly
    for (let i = 0; i < 1_000; i++) {
      const [lease] = await acquireNow(r.gov, 1);
      lease!.succeeded();
    }
    assert.equal(r.pod("p0").width, 29);
  });

  test("an install where nothing refuses never sees a width change", async () => {
    const r = rig({ limit: 256, pods: pods(4, 64) });
    let changes = 0;
    r.gov.onWidthChange(() => changes++);
    const held: Lease[] = [];
    for (let i = 0; i < 3_000; i++) {
      // Vary the concurrency between 0 and 250 so every pod is used at and below its ceiling.
      const target = Math.floor(125 + 125 * Math.sin(i / 40));
      while (held.length > target) held.shift()!.succeeded();
      const w = watch(r.gov.acquire(LANE));
      await flush();
      if (w.lease !== undefined) held.push(w.lease);
    }
    for (const lease of held) lease.succeeded();
    assert.equal(changes, 0);
    for (const p of r.gov.snapshot().pods) {
      assert.equal(p.width, 64);
      assert.equal(p.breaker, "closed");
    }
  });
});
