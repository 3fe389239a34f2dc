/**
 * Issue 24's proof, short: `noisy-neighbour` at 8 slots for 40 seed seconds at scale 0.1 (~15 s in
 * all). Tenant A floods at 10 × its share, tenant B offers half of its own; the three runs (B
 * alone through sluice, A + B through sluice, A + B straight to the pod) are judged by what the
 * pod itself counted per tenant (`x-sim-tenant`), not only by the clients. The p99-wait target
 * (B under A's flood within 1.2 × B alone) is a latency: it is the full profile's check
 * (`npm run load -- noisy-neighbour`, docs/load.md), not asserted here.
 */
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { podSuccessB, TARGETS } from "../../src/load/profiles/noisy-neighbour-checks.js";
import { noisyNeighbourProfile, TENANT_A, TENANT_B } from "../../src/load/profiles/noisy-neighbour.js";
import { type RunnerResult, runProfile } from "../../src/load/runner.js";
import type { RunStats } from "../../src/load/stats.js";

const profile = noisyNeighbourProfile({ slots: 8, serviceMs: 4_000, durationMs: 40_000, warmupMs: 10_000 });
let result: RunnerResult;

/** The pods' own count for `tenant` in `run`. */
function atPod(run: RunStats, tenant: string) {
  const counts = run.pods.map((p) => p.tenants?.[tenant]);
  return {
    completed: counts.reduce((n, t) => n + (t?.completed ?? 0), 0),
    slotMs: counts.reduce((n, t) => n + (t?.slot_ms ?? 0), 0),
  };
}

before(async () => {
  result = await runProfile({ profile, scale: 0.1 });
});

describe("noisy-neighbour, short", () => {
  test("every run completed, nothing leaked, every byte as sent", () => {
    for (const [name, run] of [
      ["B alone", result.alone],
      ["through sluice", result.sluice],
      ["straight", result.direct],
    ] as const) {
      assert.ok(run, `${name}: ran`);
      assert.equal(run.error, undefined, `${name}: ${run.error}`);
      assert.equal(run.bytes_mismatches, 0, name);
      if (run.target === "sluice") assert.equal(run.leaked_reservations, 0, run.leak_detail.join("; "));
    }
  });

  test("B alone through sluice: the pod completes every call B offers", () => {
    const alone = result.alone!;
    assert.deepEqual(Object.keys(alone.groups), ["B"], "A does not offer in this run");
    const b = podSuccessB(alone, TENANT_B.id)!;
    assert.ok(b.rate >= TARGETS.successB, `the pod completed ${b.completed} of ${alone.groups.B!.offered}`);
    assert.equal(atPod(alone, TENANT_A.id).completed, 0);
  });

  test("straight to the pod B starves behind A's flood (the pod's own count)", () => {
    const direct = result.direct!;
    const b = podSuccessB(direct, TENANT_B.id)!;
    assert.ok(
      b.rate < TARGETS.starvedB,
      `the pod completed ${b.completed} of B's ${direct.groups.B!.offered} calls`,
    );
    // The pod was busy all the same, nearly all of it with A's calls (the clients gave up on most).
    assert.ok(atPod(direct, TENANT_A.id).slotMs > 4 * atPod(direct, TENANT_B.id).slotMs);
  });

  test("through sluice B keeps its share under A's flood, and A uses what B leaves (the pod's own count)", {
    todo: "needs weighted fair queuing (issue 24)",
  }, () => {
    const sluice = result.sluice!;
    const b = podSuccessB(sluice, TENANT_B.id)!;
    assert.ok(
      b.rate >= TARGETS.successB,
      `the pod completed ${b.completed} of B's ${sluice.groups.B!.offered} calls (client: ${sluice.groups.B!.completed})`,
    );
    assert.ok(
      sluice.utilization >= TARGETS.utilization,
      `the lane's slots busy ${(sluice.utilization * 100).toFixed(1)} % after the warm-up`,
    );
    assert.ok(atPod(sluice, TENANT_A.id).completed > 0, "A ran in what B left");
  });
});
