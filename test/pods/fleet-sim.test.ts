/**
 * The fleet simulation (bench/fleet-sim-lib.ts) in CI-length runs: it is deterministic, the widths
 * converge on the pods' hidden capacities and carry ≥ 90 % of them, no pod is ever sent more than
 * its ceiling, and a dead fleet is not hammered with re-dispatches. Simulated time is free (a
 * manual clock): 140 s of it take well under a second of wall time.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { convergenceBand, runScenario, type SimResult, settledAtMs } from "../../bench/fleet-sim-lib.js";
import { deadFleetScenario, type Scenario, seed000Fleet } from "../../bench/fleet-sim-scenarios.js";

/**
 * Four pods serving 29–32 at once behind ceilings of 64, offered twice what they can serve, as in
 * bench/fleet-sim.ts. Mean service time 1 s, so one round trip — one AIMD step — is about 1 s.
 *
 * A converged width stays within `convergenceBand(capacity)`: the AIMD sawtooth, from
 * ⌊0.8 × (capacity + 1)⌋ after a repeat cut to capacity + 1, the probe the pod refuses.
 *
 * Warm-up 20 s: the first cut halves the width from the in-flight count at the refusal
 * (capacity + 1 → 15 or 16), and +1 per round trip takes it back into its band in 11–14 s
 * (`node --import tsx bench/fleet-sim.ts --widths` prints it). The old 5 s warm-up measured that
 * climb, not the steady state: 75 % utilization, widths 17–29.
 */
const steady: Scenario = {
  name: "steady",
  pods: seed000Fleet(),
  service: { meanMs: 1000, sigma: 0.5 },
  load: { kind: "poisson", factor: 2 },
  onRefusal: "retry",
  warmupMs: 20_000,
  measureMs: 120_000,
  seed: 7,
};

/** A dead fleet for 30 s after a 5 s warm-up; the window is the outage. Run once, shared. */
let deadRun: Promise<SimResult> | undefined;
const dead = () =>
  (deadRun ??= runScenario({
    ...deadFleetScenario(7),
    warmupMs: 5_000,
    measureMs: 30_000,
    outages: [{ fromMs: 5_000, toMs: 35_000 }],
  }));

describe("fleet simulation", () => {
  test("a run is a pure function of its scenario and seed", async () => {
    const brief = { ...steady, warmupMs: 5_000, measureMs: 3_000 };
    const a = await runScenario(brief);
    const b = await runScenario(brief);
    assert.deepEqual(a, b);
    const c = await runScenario({ ...brief, seed: 8 });
    assert.notEqual(c.dispatches, a.dispatches);
  });

  for (const seed of [7, 8, 9]) {
    test(`every pod's width settles within its band by the end of the warm-up and the fleet carries ≥ 90 % of its capacity (seed ${seed})`, async () => {
      const r = await runScenario({ ...steady, seed });
      for (const p of r.pods) {
        const [lo, hi] = convergenceBand(p.capacity);
        const settled = settledAtMs(p, r.bucketMs);
        assert.ok(
          settled <= steady.warmupMs,
          `${p.id} (capacity ${p.capacity}): width in ${lo}–${hi} only from ${settled} ms; [min, max] per second from 0 s: ${JSON.stringify(p.widthSeries.slice(0, 30))}`,
        );
        assert.ok(
          p.minWidth >= lo && p.maxWidth <= hi && p.finalWidth >= lo && p.finalWidth <= hi,
          `${p.id} (capacity ${p.capacity}): width ${p.minWidth}–${p.maxWidth}, final ${p.finalWidth}, band ${lo}–${hi}`,
        );
        // The sawtooth spends most of its time near the top: within 10 % of the capacity on average.
        assert.ok(
          p.meanWidth >= 0.9 * p.capacity && p.meanWidth <= hi,
          `${p.id} (capacity ${p.capacity}): mean width ${p.meanWidth}`,
        );
      }
      assert.ok(r.utilization >= 0.9, `utilization ${r.utilization}`);
      assert.ok(r.refusalsPer1000 <= 10, `${r.refusalsPer1000} refusals per 1,000`);
      assert.ok(r.maxCeilingUse <= 1, `max in flight / ceiling = ${r.maxCeilingUse}`);
    });
  }

  test("with every pod refusing everything, re-dispatches stay within 1.1 × calls plus the budget banked before", async () => {
    const r = await dead();
    // Pods held at their floor rest after each refusal, so few calls are even tried.
    assert.ok(r.calls > 500, `${r.calls} calls`);
    assert.ok(r.dispatches <= 1.1 * r.calls + 0.2 * 256, `${r.dispatches} attempts for ${r.calls} calls`);
    assert.ok(r.pods.filter((p) => p.finalBreaker !== "closed").length <= 2, "at most half the pods open");
  });

  test("with every pod refusing everything, upstream attempts stay within 1.1 × calls", async () => {
    const r = await dead();
    // No success refills the re-dispatch bank during an outage (src/core/lane.ts retryBank).
    assert.ok(r.dispatches <= 1.1 * r.calls, `${r.dispatches} attempts for ${r.calls} calls`);
  });
});
