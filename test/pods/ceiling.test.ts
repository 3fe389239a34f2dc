/**
 * Seed 001 validation (a), (c), (d): one ceiling per endpoint shared by every demand source,
 * priority deciding the order within it, and explicit ceilings winning.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Lease } from "../../src/core/lease.js";
import type { Priority } from "../../src/core/priority.js";
import { flush, prng } from "../helpers/index.js";
import { acquireNow, LANE, pods, rig, runUntil, sleep, type Watched, watch } from "./helpers.js";

describe("one ceiling per endpoint (seed 001)", () => {
  test("three demand sources hammering one endpoint never exceed its ceiling together", async () => {
    const r = rig({ pods: [{ id: "http://gb10:8000", maxInflight: 32 }] });
    const random = prng(42);
    let inflight = 0;
    let peak = 0;
    let finished = 0;
    // Each source fans out with its own local width (16, 24, 48), far above the ceiling combined.
    const source = async (fanOut: number, calls: number, priority: Priority) => {
      let next = 0;
      const worker = async () => {
        while (next < calls) {
          next++;
          const lease = await r.gov.acquire(LANE, { priority });
          inflight++;
          peak = Math.max(peak, inflight);
          await sleep(r.clock, 20 + Math.floor(random() * 200));
          inflight--;
          lease.succeeded();
        }
      };
      await Promise.all(Array.from({ length: fanOut }, worker));
      finished++;
    };
    void source(16, 150, "bulk"); // ingestion embeddings
    void source(24, 150, "default"); // enrichment
    void source(48, 150, "interactive"); // agent orchestration
    await runUntil(r.clock, () => finished === 3);
    assert.ok(peak <= 32, `peak in flight ${peak}`);
    assert.equal(peak, 32, "and the ceiling is actually used");
    assert.equal(r.gov.snapshot().lanes[0]!.inflight, 0);
  });

  test("priority decides the order within the ceiling: interactive goes ahead of a saturating bulk fan-out", async () => {
    const r = rig({ reserve: 1, pods: [{ id: "http://gb10:8000", maxInflight: 4 }] });
    const order: string[] = [];
    const bulk = await acquireNow(r.gov, 3); // limit 4 − reserve 1: bulk fills what it may
    const queued: Array<[string, Watched]> = [];
    for (let i = 0; i < 6; i++) queued.push([`bulk-${i}`, watch(r.gov.acquire(LANE, { priority: "bulk" }))]);
    await flush();
    const urgent = watch(r.gov.acquire(LANE, { priority: "interactive" }));
    await flush();
    assert.ok(urgent.lease !== undefined, "the reserved slot takes interactive at once");
    queued.push(["interactive-2", watch(r.gov.acquire(LANE, { priority: "interactive" }))]);
    queued.push(["default-1", watch(r.gov.acquire(LANE, { priority: "default" }))]);
    await flush();
    const held: Lease[] = [...bulk, urgent.lease!];
    while (order.length < queued.length && held.length > 0) {
      held.shift()!.succeeded();
      await flush();
      for (const [name, w] of queued)
        if (w.lease !== undefined && !order.includes(name)) {
          order.push(name);
          held.push(w.lease);
        }
      assert.ok(r.gov.snapshot().lanes[0]!.inflight <= 4);
    }
    assert.deepEqual(order, [
      "interactive-2",
      "default-1",
      "bulk-0",
      "bulk-1",
      "bulk-2",
      "bulk-3",
      "bulk-4",
      "bulk-5",
    ]);
  });

  test("an explicit lane limit below its pods' ceilings wins", async () => {
    const r = rig({ limit: 8, reserve: 0, pods: pods(2, 64) });
    const ws = Array.from({ length: 20 }, () => watch(r.gov.acquire(LANE)));
    await flush();
    assert.equal(ws.filter((w) => w.lease !== undefined).length, 8);
    assert.equal(r.gov.snapshot().lanes[0]!.queued, 12);
  });

  test("each pod's explicit maxInflight caps what it is sent, even with adaptive width", async () => {
    const r = rig({
      limit: 100,
      reserve: 0,
      pods: [
        { id: "a", maxInflight: 3 },
        { id: "b", maxInflight: 5 },
      ],
    });
    const ws = Array.from({ length: 20 }, () => watch(r.gov.acquire(LANE)));
    await flush();
    const on = (id: string) => ws.filter((w) => w.lease?.pod === id).length;
    assert.equal(on("a"), 3);
    assert.equal(on("b"), 5);
    assert.equal(r.pod("a").width, 3);
    assert.equal(r.pod("b").width, 5);
  });

  test("without an explicit limit the lane carries the sum of its pods' ceilings, never less", async () => {
    const r = rig({ reserve: 0, pods: pods(2, 64) });
    const snap = r.gov.snapshot();
    assert.equal(snap.lanes[0]!.limit, 128);
    assert.equal(snap.lanes[0]!.width, 128);
    const leases = await acquireNow(r.gov, 128);
    assert.equal(leases.length, 128);
    for (const p of r.gov.snapshot().pods) assert.equal(p.inflight, 64);
  });
});
