/**
 * Issue 24 "on two replicas", short: `noisy-neighbour-fleet`'s run through sluice — two gateway
 * replicas on one Redis store (REDIS_URL, a fresh fleet prefix), the clients taking them in turn —
 * at the short test's size (test/load/noisy-neighbour.test.ts runs the other two runs). Judged by
 * what the pod counted per tenant: B's calls all completed under A's flood, the lane kept full.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { noisyNeighbourProfile, TENANT_A, TENANT_B } from "../../src/load/profiles/noisy-neighbour.js";
import { podSuccessB, TARGETS } from "../../src/load/profiles/noisy-neighbour-checks.js";
import { runProfile } from "../../src/load/runner.js";

describe("noisy-neighbour-fleet, short", () => {
  test("through two replicas on Redis B keeps its share under A's flood, and A uses what B leaves (the pod's own count)", async () => {
    const profile = noisyNeighbourProfile({
      replicas: 2,
      slots: 16,
      // 1.6 s a call at this scale, as in the one-gateway test.
      serviceMs: 8_000,
      durationMs: 30_000,
      warmupMs: 8_000,
      clientTimeoutMs: 20_000,
    });
    await profile.preflight?.();
    const { sluice } = await runProfile({ profile, scale: 0.2, only: "sluice" });
    assert.ok(sluice, "ran");
    assert.equal(sluice.error, undefined, sluice.error);
    assert.equal(sluice.leaked_reservations, 0, sluice.leak_detail.join("; "));
    assert.equal(sluice.bytes_mismatches, 0);
    const b = podSuccessB(sluice, TENANT_B.id)!;
    assert.ok(
      b.rate >= TARGETS.successB,
      `the pod completed ${b.completed} of B's ${sluice.groups.B!.offered} calls (client: ${sluice.groups.B!.completed})`,
    );
    assert.ok(
      sluice.utilization >= TARGETS.utilization,
      `the lane's slots busy ${(sluice.utilization * 100).toFixed(1)} % after the warm-up`,
    );
    const a = sluice.pods.reduce((n, p) => n + (p.tenants?.[TENANT_A.id]?.completed ?? 0), 0);
    assert.ok(a > 0, "A ran in what B left");
  });
});
