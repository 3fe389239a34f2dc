/**
 * The receipt a `sluice load` run writes (issue 11): its fields for both runs, a failed run
 * keeping its receipt, and `--baseline` saying whether settings or hardware changed before it
 * calls anything a regression.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { pino } from "pino";
import { parseConfig } from "../../src/config/schema.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { compareReceipts } from "../../src/load/compare.js";
import { podUrls } from "../../src/load/pods.js";
import type { Receipt } from "../../src/load/receipt.js";
import { scaledSeconds } from "../../src/load/runner.js";
import { BaselineError, runSession } from "../../src/load/session.js";
import { tinyProfile } from "./tiny.js";

const dir = mkdtempSync(join(tmpdir(), "sluice-receipts-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function read(path: string): Receipt {
  return JSON.parse(readFileSync(path, "utf8")) as Receipt;
}

describe("sluice load receipts", () => {
  test("a receipt holds the settings' hash, the hardware and both runs' numbers", async () => {
    const path = join(dir, "tiny.json");
    const r = await runSession({ profile: tinyProfile(), scale: 1, command: "test", receiptPath: path });
    assert.equal(r.exitCode, 0, JSON.stringify(r.receipt.checks));
    const receipt = read(path);
    assert.deepEqual(receipt, JSON.parse(JSON.stringify(r.receipt)), "the file is the receipt returned");
    assert.equal(receipt.profile, "tiny");
    assert.match(receipt.config_hash, /^sha256:[0-9a-f]{64}$/);
    assert.equal(typeof receipt.hardware.cpu_model, "string");
    assert.ok(receipt.hardware.cores >= 1 && receipt.hardware.memory_bytes > 0);
    assert.equal(receipt.hardware.node, process.version);
    // Through sluice, at the top level: a lane of 2 and a queue of 4 carry 6 of 10.
    assert.equal(receipt.target, "sluice");
    assert.equal(receipt.offered, 10);
    assert.equal(receipt.completed, 6);
    assert.deepEqual(receipt.refused, { queue_full: 4 });
    for (const key of ["p50", "p90", "p99", "mean"] as const)
      assert.equal(typeof receipt.latency_ms?.[key], "number");
    assert.equal(typeof receipt.queue_wait_ms?.p99, "number");
    assert.equal(receipt.upstream_max_inflight, 2);
    assert.equal(typeof receipt.utilization, "number");
    assert.equal(receipt.leaked_reservations, 0);
    assert.equal(receipt.bytes_mismatches, 0);
    // Straight to the pod: the same fields, nothing refused, no reservations to leak.
    const d = receipt.direct!;
    assert.equal(d.target, "direct");
    assert.deepEqual([d.offered, d.completed, d.leaked_reservations, d.queue_wait_ms], [10, 10, null, null]);
    assert.equal(d.upstream_max_inflight, 10, "all ten at the pod at once: 4 running, 6 waiting");
    assert.ok(receipt.checks.some((c) => /no reservation leaked/.test(c.name) && c.met));
    assert.ok(receipt.checks.some((c) => /bytes exactly as the sim sent/.test(c.name) && c.met));
    assert.equal(receipt.ok, true);
  });

  test("a failed run keeps its receipt, saying what failed", async () => {
    const path = join(dir, "failed.json");
    const broken = tinyProfile({ config: () => ({ models: [{ name: "m", pods: [] }] }) });
    const r = await runSession({ profile: broken, scale: 1, command: "test", receiptPath: path });
    assert.equal(r.exitCode, 1);
    const receipt = read(path);
    assert.equal(receipt.ok, false);
    assert.match(receipt.error ?? "", /models\[0\]\.pods/);
    assert.ok(receipt.checks.some((c) => c.name === "the sluice run completed" && !c.met));
    assert.equal(receipt.direct?.completed, 10, "the direct run still ran and kept its numbers");
  });

  test("--baseline: the same settings and hardware compare; a changed setting is named, not called a regression", async () => {
    const first = join(dir, "base.json");
    await runSession({ profile: tinyProfile(), scale: 1, command: "test", receiptPath: first });
    const same = await runSession({
      profile: tinyProfile(),
      scale: 1,
      command: "test",
      receiptPath: join(dir, "same.json"),
      baselinePath: first,
    });
    assert.equal(same.comparison?.verdict, "comparable");
    const changed = await runSession({
      profile: tinyProfile(),
      scale: 2,
      command: "test",
      receiptPath: join(dir, "changed.json"),
      baselinePath: first,
    });
    assert.equal(changed.comparison?.verdict, "settings changed");
    assert.ok(changed.comparison!.settings_changed.some((s) => s.startsWith("settings.time_scale: 1 → 2")));
    assert.deepEqual(changed.comparison!.regressions, []);
    assert.equal(
      read(join(dir, "changed.json")).baseline !== undefined,
      true,
      "the comparison is in the receipt",
    );
  });

  test("--baseline that is no receipt stops before any load", async () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, '{"hello": 1}');
    await assert.rejects(
      runSession({ profile: tinyProfile(), scale: 1, command: "test", baselinePath: bad }),
      (e: unknown) =>
        e instanceof BaselineError && e.file === bad && /not a sluice load receipt/.test(e.message),
    );
  });

  test("--gateway drives a gateway already running, configured from --print-config's pods", async () => {
    const profile = tinyProfile();
    // Consecutive ports for the pods, as an operator would pick them for a gateway's config.
    // Below Linux's ephemeral range (32768+), so no client socket holds one of them.
    const base = 20_000 + Math.floor(Math.random() * 12_000);
    const config = parseConfig(profile.config(podUrls(profile, base), scaledSeconds(1)));
    const gateway = new Gateway({ config, logger: pino({ level: "silent" }) });
    const url = await gateway.listen(0, "127.0.0.1");
    try {
      const r = await runSession({
        profile,
        scale: 1,
        command: "test",
        receiptPath: join(dir, "external.json"),
        gatewayUrl: url,
        simBasePort: base,
        only: "sluice",
      });
      assert.equal(r.receipt.completed, 6, JSON.stringify(r.receipt.error));
      assert.equal(r.receipt.leaked_reservations, 0);
      assert.equal((r.receipt.settings.gateway as { source: string }).source, "external");
      assert.equal(r.receipt.direct, null);
    } finally {
      await gateway.close();
    }
  });
});

describe("compareReceipts", () => {
  const base = {
    receipt_version: 1,
    profile: "p",
    config_hash: "sha256:a",
    settings: { time_scale: 0.1 },
    hardware: {
      cpu_model: "X",
      cores: 2,
      memory_bytes: 8e9,
      node: "v20.20.2",
      platform: "linux",
      arch: "x64",
    },
    software: { sluice: "0.1.0", commit: "aaa" },
    checks: [{ name: "c", target: "0", value: "0", met: true }],
    target: "sluice",
    completed: 100,
    latency_ms: { n: 100, p50: 100, p90: 150, p99: 200, mean: 110, max: 250 },
    utilization: 0.97,
    oom_events: 0,
    leaked_reservations: 0,
    bytes_mismatches: 0,
    pod_refusals_after_warmup: 0,
    queue_wait_ms: null,
    refusal_ms: null,
    direct: null,
  } as unknown as Receipt;
  const slower = {
    ...base,
    latency_ms: { n: 100, p50: 300, p90: 400, p99: 500, mean: 320, max: 600 },
    checks: [{ name: "c", target: "0", value: "3", met: false }],
    software: { sluice: "0.1.0", commit: "bbb" },
  } as unknown as Receipt;

  test("the same settings and hardware: a slower run and a check no longer met are regressions", () => {
    const c = compareReceipts(base, slower, "b.json");
    assert.equal(c.verdict, "comparable");
    assert.ok(c.regressions.some((r) => r.startsWith("sluice.latency_ms.mean: 110 → 320")));
    assert.ok(c.regressions.some((r) => r.startsWith("check no longer met: c")));
    assert.deepEqual(c.software_changed, ["commit aaa → bbb"]);
  });

  test("other hardware: the differences are listed and nothing is called a regression", () => {
    const other = { ...slower, hardware: { ...base.hardware, cores: 8, cpu_model: "Y" } } as Receipt;
    const c = compareReceipts(base, other, "b.json");
    assert.equal(c.verdict, "hardware changed");
    assert.deepEqual(c.hardware_changed, ["cpu_model: X → Y", "cores: 2 → 8"]);
    assert.deepEqual(c.regressions, []);
    assert.ok(c.deltas.some((d) => d.metric === "sluice.latency_ms.mean" && d.worse));
  });

  test("other settings and other hardware both named; another profile is not compared", () => {
    const both = {
      ...slower,
      config_hash: "sha256:b",
      settings: { time_scale: 0.2 },
      hardware: { ...base.hardware, memory_bytes: 16e9 },
    } as Receipt;
    const c = compareReceipts(base, both, "b.json");
    assert.equal(c.verdict, "settings and hardware changed");
    assert.deepEqual(c.settings_changed, ["settings.time_scale: 0.1 → 0.2"]);
    assert.deepEqual(c.regressions, []);
    assert.equal(
      compareReceipts(base, { ...base, profile: "q" } as Receipt, "b.json").verdict,
      "different profile",
    );
  });
});
