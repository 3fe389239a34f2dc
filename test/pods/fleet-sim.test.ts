/**
 * The fleet simulation (bench/fleet-sim-lib.ts) in short runs: it is deterministic, it never
 * sends a pod more than its ceiling, and a dead fleet is not hammered with re-dispatches.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  deadFleetScenario,
  runScenario,
  type Scenario,
  type SimResult,
  seed000Fleet,
} from "../../bench/fleet-sim-lib.js";

const short: Scenario = {
  name: "short steady",
  pods: seed000Fleet(),
  service: { meanMs: 1000, sigma: 0.5 },
  load: { kind: "poisson", factor: 2 },
  onRefusal: "retry",
  warmupMs: 5_000,
  measureMs: 10_000,
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
    const brief = { ...short, measureMs: 3_000 };
    const a = await runScenario(brief);
    const b = await runScenario(brief);
    assert.deepEqual(a, b);
    const c = await runScenario({ ...brief, seed: 8 });
    assert.notEqual(c.dispatches, a.dispatches);
  });

  test("no pod is ever sent more than its ceiling, and the widths converge near the hidden capacities", async () => {
    const r = await runScenario(short);
    assert.ok(r.maxCeilingUse <= 1, `max in flight / ceiling = ${r.maxCeilingUse}`);
    for (const p of r.pods) {
      assert.ok(p.maxWidth <= p.capacity + 2, `${p.id}: width ${p.maxWidth} for capacity ${p.capacity}`);
      assert.ok(p.minWidth >= 4);
    }
    assert.ok(r.refusalsPer1000 <= 10, `${r.refusalsPer1000} refusals per 1,000`);
  });

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
