import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { parse } from "yaml";
import { type ConfigWarning, parseConfig } from "./schema.js";
import { config, DIGEST, invalid } from "./test-helpers.js";

const FULL = parse(readFileSync(new URL("../../test/config/full.yaml", import.meta.url), "utf8"));

describe("parseConfig", () => {
  test("parses the example config with units converted and defaults applied", () => {
    const c = parseConfig(FULL);
    assert.deepEqual(c.listen, { host: "127.0.0.1", port: 8080 });
    assert.deepEqual(c.store, { kind: "memory" });
    assert.deepEqual(c.admission, {
      mode: "enforce",
      maxConcurrency: 32,
      maxQueued: 32,
      queueTimeoutMs: 30_000,
      maxBodyBytes: 20 * 2 ** 20,
      maxBufferedBytes: 256 * 2 ** 20,
      maxJsonDepth: 64,
      maxJsonValues: 500_000,
      headerTimeoutMs: 10_000,
      bodyTimeoutMs: 30_000,
      drainTimeoutMs: 30_000,
      agingMs: 60_000,
    });
    assert.equal(c.auth.open, false);
    assert.deepEqual(c.auth.keys, [
      { id: "chat-ui", sha256: Buffer.from(DIGEST, "hex"), maxPriority: "interactive", maxInflight: 16 },
    ]);
    assert.deepEqual(c.models[0], {
      name: "qwen3-27b",
      maxConcurrentRequests: 32,
      reserve: 1,
      queueLimit: 128,
      queueTimeoutMs: 30_000,
      maxQuotaPauseMs: 60_000,
      upstreamTimeoutMs: 60_000,
      streamIdleTimeoutMs: 30_000,
      tpm: 400_000,
      tpmReserve: 12_500, // the reserve share: 1 of 32 slots
      defaultMaxTokens: 4096,
      imageTokens: 1445,
      fallback: "qwen3-8b",
      upstreamApiKeyEnv: "QWEN_API_KEY",
      mode: "enforce",
      adaptive: { floor: 4, maxWaiting: 5, metricsPollMs: 1000 },
      breaker: {
        enabled: true,
        failThreshold: 1,
        baseCooldownMs: 500,
        maxCooldownMs: 30_000,
        backoffFactor: 2,
      },
      pods: [{ url: "http://10.0.0.5:8000", maxInflight: 64, gpuGroup: "gb10" }],
    });
    assert.deepEqual(c.models[1]?.pods, [
      { url: "http://10.0.0.6:8000", maxInflight: 32, gpuGroup: "10.0.0.6" },
    ]);
    assert.deepEqual(c.routes, [{ match: "/ocr/", model: "ocr-pods" }]);
    assert.deepEqual(c.gpuGroups, { gb10: { maxInflight: 40 } });
    assert.deepEqual(c.accounts, {
      "openai-prod": {
        maxInflight: 80,
        tpm: 2_000_000,
        rpm: 5000,
        // The largest reserve share among its models (1 of 32 slots).
        tpmReserve: 62_500,
        rpmReserve: 156,
        adaptive: { floor: 4 },
        maxQuotaPauseMs: 60_000,
        models: ["gpt-x"],
      },
    });
    assert.deepEqual(c.log, { level: "info" });
    assert.deepEqual(c.admin, { keys: [] });
  });

  test("fills every default for a config that names only a model and its pod", () => {
    const c = parseConfig(config());
    assert.deepEqual(c.models, [
      {
        name: "m",
        maxConcurrentRequests: 32,
        reserve: 1,
        queueLimit: 128,
        queueTimeoutMs: 30_000,
        maxQuotaPauseMs: 60_000,
        upstreamTimeoutMs: 60_000,
        streamIdleTimeoutMs: 30_000,
        defaultMaxTokens: 4096,
        imageTokens: 1445,
        mode: "enforce",
        adaptive: { floor: 4, maxWaiting: 5, metricsPollMs: 1000 },
        breaker: {
          enabled: true,
          failThreshold: 1,
          baseCooldownMs: 500,
          maxCooldownMs: 30_000,
          backoffFactor: 2,
        },
        pods: [{ url: "http://10.0.0.1:8000", maxInflight: 32, gpuGroup: "10.0.0.1" }],
      },
    ]);
    assert.deepEqual(c.routes, []);
    assert.deepEqual(c.gpuGroups, {});
    assert.deepEqual(c.accounts, {});
  });

  test("upstream_timeout_s, stream_idle_timeout_s (per model) and admission.drain_timeout_s are durations", () => {
    const c = parseConfig(
      config(
        { admission: { drain_timeout_s: "250ms" } },
        { upstream_timeout_s: 2, stream_idle_timeout_s: "1.5s" },
      ),
    );
    assert.deepEqual(
      [c.models[0]!.upstreamTimeoutMs, c.models[0]!.streamIdleTimeoutMs, c.admission.drainTimeoutMs],
      [2000, 1500, 250],
    );
    assert.equal(invalid(config({}, { upstream_timeout_s: 0 })).path, "models[0].upstream_timeout_s");
    assert.equal(invalid(config({}, { stream_idle_timeout_s: -1 })).path, "models[0].stream_idle_timeout_s");
    assert.equal(
      invalid(config({ admission: { drain_timeout_s: "soon" } })).path,
      "admission.drain_timeout_s",
    );
  });

  test("max_quota_pause_s caps a model's quota pauses (seconds to ms; a negative one is refused by path)", () => {
    assert.equal(parseConfig(config({}, { max_quota_pause_s: 5 })).models[0]!.maxQuotaPauseMs, 5000);
    assert.equal(invalid(config({}, { max_quota_pause_s: -1 })).path, "models[0].max_quota_pause_s");
  });

  test("resolves max_queued 0 to max_concurrency and keeps an explicit value", () => {
    assert.equal(parseConfig(config({ admission: { max_concurrency: 12 } })).admission.maxQueued, 12);
    assert.equal(
      parseConfig(config({ admission: { max_concurrency: 12, max_queued: 5 } })).admission.maxQueued,
      5,
    );
  });

  test("clamps reserve to max_concurrent_requests − 1 and reports it as a warning, not an error", () => {
    const warnings: ConfigWarning[] = [];
    const c = parseConfig(config({}, { max_concurrent_requests: 3, reserve: 5 }), undefined, {
      onWarning: (w) => warnings.push(w),
    });
    assert.equal(c.models[0]?.reserve, 2);
    assert.equal(warnings[0]?.path, "models[0].reserve");
    assert.equal(parseConfig(config({}, { max_concurrent_requests: 1 })).models[0]?.reserve, 0);
    assert.equal(parseConfig(config({}, { max_concurrent_requests: 0 })).models[0]?.reserve, 0);
  });

  test("warns about a GPU group no pod belongs to, and a pod tag no group lists, each suggesting the other", () => {
    const warnings: ConfigWarning[] = [];
    parseConfig(
      config(
        { gpu_groups: { "gb-10": { max_inflight: 4 } } },
        { pods: [{ url: "http://x:1", gpu_group: "gb10" }] },
      ),
      undefined,
      { onWarning: (w) => warnings.push(w) },
    );
    assert.deepEqual(warnings.map((w) => w.path).sort(), ["gpu_groups.gb-10", "models[0].pods[0].gpu_group"]);
    assert.match(warnings.find((w) => w.path === "gpu_groups.gb-10")?.message ?? "", /did you mean "gb10"/);
    assert.match(
      warnings.find((w) => w.path === "models[0].pods[0].gpu_group")?.message ?? "",
      /gb10 is not listed in gpu_groups, so it bounds nothing \(did you mean "gb-10"\?\)/,
    );
  });

  test("warns when the adaptive floor is above a pod's max_inflight", () => {
    const warnings: ConfigWarning[] = [];
    parseConfig(config({}, { pods: [{ url: "http://x:1", max_inflight: 2 }] }), undefined, {
      onWarning: (w) => warnings.push(w),
    });
    assert.deepEqual(
      warnings.map((w) => w.path),
      ["models[0].adaptive.floor"],
    );
  });

  test("defaults a pod's max_inflight to the model's limit and the limit to the sum its pods state", () => {
    const pods = [{ url: "http://a:1" }, { url: "http://b:1" }];
    assert.deepEqual(
      parseConfig(config({}, { max_concurrent_requests: 6, pods })).models[0]?.pods.map((p) => p.maxInflight),
      [6, 6],
    );
    const stated = [
      { url: "http://a:1", max_inflight: 8 },
      { url: "http://b:1", max_inflight: 4 },
    ];
    const m = parseConfig(config({}, { pods: stated })).models[0]!;
    assert.equal(m.maxConcurrentRequests, 12);
    assert.equal(m.queueLimit, 48);
    assert.equal(parseConfig(config({}, { pods })).models[0]?.maxConcurrentRequests, 32);
  });

  test("defaults a pod's gpu_group to the URL's hostname", () => {
    const pods = [{ url: "http://gpu-1.internal:8000" }, { url: "http://gpu-2:8000", gpu_group: "rack" }];
    assert.deepEqual(
      parseConfig(config({}, { pods })).models[0]?.pods.map((p) => p.gpuGroup),
      ["gpu-1.internal", "rack"],
    );
    const lane = parseConfig(config({}, { pods, gpu_group: "gb10" })).models[0]!;
    assert.equal(lane.gpuGroup, "gb10");
    assert.deepEqual(
      lane.pods.map((p) => p.gpuGroup),
      ["gpu-1.internal", "rack"],
    );
  });

  test("inherits the admission mode unless the model overrides it", () => {
    const c = parseConfig(config({ admission: { mode: "shadow" } }));
    assert.equal(c.models[0]?.mode, "shadow");
    assert.equal(
      parseConfig(config({ admission: { mode: "shadow" } }, { mode: "enforce" })).models[0]?.mode,
      "enforce",
    );
  });

  test("turns AIMD off with adaptive: false and on with defaults for true", () => {
    assert.equal(parseConfig(config({}, { adaptive: false })).models[0]?.adaptive, false);
    assert.deepEqual(parseConfig(config({}, { adaptive: true })).models[0]?.adaptive, {
      floor: 4,
      maxWaiting: 5,
      metricsPollMs: 1000,
    });
  });

  test("breaker.enabled: false switches a model's breaker off (on by default)", () => {
    assert.equal(parseConfig(config({}, { breaker: { enabled: false } })).models[0]?.breaker.enabled, false);
    assert.equal(parseConfig(config()).models[0]?.breaker.enabled, true);
  });

  test("reads listen as host:port, [v6]:port or a bare port, and store as memory", () => {
    assert.deepEqual(parseConfig(config({ listen: "0.0.0.0:9000" })).listen, { host: "0.0.0.0", port: 9000 });
    assert.deepEqual(parseConfig(config({ listen: "[::1]:80" })).listen, { host: "::1", port: 80 });
    assert.deepEqual(parseConfig(config({ listen: 8081 })).listen, { host: "127.0.0.1", port: 8081 });
    assert.deepEqual(parseConfig(config({ store: "memory" })).store, { kind: "memory" });
  });

  test("lowercases a sha256 digest and holds it as 32 bytes", () => {
    const c = parseConfig(config({ admin: { keys: [{ id: "ops", sha256: DIGEST.toUpperCase() }] } }));
    assert.equal(c.admin.keys[0]?.sha256.length, 32);
    assert.equal(c.admin.keys[0]?.sha256.toString("hex"), DIGEST);
  });

  test("keeps only the name of the upstream key's environment variable, never its value", () => {
    process.env.SLUICE_TEST_UPSTREAM_KEY = "sk-live-secret-value";
    try {
      const c = parseConfig(config({}, { upstream_api_key_env: "SLUICE_TEST_UPSTREAM_KEY" }));
      assert.equal(c.models[0]?.upstreamApiKeyEnv, "SLUICE_TEST_UPSTREAM_KEY");
      assert.ok(!JSON.stringify(c).includes("sk-live-secret-value"));
    } finally {
      delete process.env.SLUICE_TEST_UPSTREAM_KEY;
    }
  });
});
