/**
 * Found by the property suite's grant log, fixed in 8f36e3a: when an arrival was queued and then
 * granted by its own admit pass (an interactive call taking the reserve while others wait),
 * `sluice:lease:grant` carried it twice — once from the pass, once from `acquire`. Subscribers
 * (tracing, metrics) counted that grant twice.
 */
import assert from "node:assert/strict";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { describe, test } from "node:test";
import { Governor, type Lease } from "../../src/index.js";
import { ManualClock } from "../../src/testing.js";

describe("regress: sluice:lease:grant publications", () => {
  const published: Lease[] = [];
  const listen = (message: unknown) => published.push(message as Lease);

  test("a grant on arrival and a grant from the queue are each published once", async () => {
    published.length = 0;
    subscribe("sluice:lease:grant", listen);
    try {
      const gov = new Governor({ clock: new ManualClock(), lanes: { G1: { limit: 1, reserve: 0 } } });
      const first = await gov.acquire("G1");
      const second = gov.acquire("G1");
      first.release();
      const lease = await second;
      assert.deepEqual(published, [first, lease]);
      lease.release();
    } finally {
      unsubscribe("sluice:lease:grant", listen);
    }
  });

  test("an arrival granted by its own pass is published once", async () => {
    published.length = 0;
    subscribe("sluice:lease:grant", listen);
    try {
      const gov = new Governor({ clock: new ManualClock(), lanes: { G2: { limit: 2, reserve: 1 } } });
      const held = await gov.acquire("G2");
      const bulk = gov.acquire("G2", { priority: "bulk" }); // waits: only the reserve is left
      bulk.catch(() => {});
      published.length = 0;
      const interactive = await gov.acquire("G2", { priority: "interactive" });
      assert.equal(published.filter((l) => l === interactive).length, 1);
      interactive.release();
      held.release();
      (await bulk).release();
    } finally {
      unsubscribe("sluice:lease:grant", listen);
    }
  });
});
