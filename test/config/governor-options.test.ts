/**
 * The config path and the library path agree: the gateway config maps straight to resolved
 * Governor options (no second validation), and those options are exactly what the library's own
 * validator would produce from the same settings written as `GovernorOptions`. If the config schema
 * ever let through a value the core refuses, or defaulted differently, this fails.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { DEMO_CONFIG_YAML } from "../../src/config/demo.js";
import { governorOptions } from "../../src/config/governor-options.js";
import { loadConfigText } from "../../src/config/load.js";
import { parseConfig } from "../../src/config/schema.js";
import {
  type GovernorOptions,
  isResolvedOptions,
  type LaneOptions,
  type ResolvedLane,
  type ResolvedOptions,
  resolveGovernorOptions,
} from "../../src/core/options.js";
import { Governor } from "../../src/governor/governor.js";

/** The same settings written as a library user would, through no brand: what the validator sees. */
function asLibraryOptions(o: ResolvedOptions): GovernorOptions {
  const lane = ({ groups, ...l }: ResolvedLane): LaneOptions => ({
    ...l,
    group: [...groups],
    ...(l.pods === undefined ? {} : { pods: l.pods.map((p) => ({ ...p })) }),
    adaptive: l.adaptive === false ? false : { ...l.adaptive },
    breaker: { ...l.breaker },
  });
  return {
    lanes: Object.fromEntries(Object.entries(o.lanes).map(([name, l]) => [name, lane(l)])),
    groups: structuredClone(o.groups),
    keys: structuredClone(o.keys),
    accounts: Object.fromEntries(
      Object.entries(o.accounts ?? {}).map(([name, a]) => [
        name,
        {
          ...(a.maxInflight === undefined ? {} : { maxInflight: a.maxInflight }),
          ...(a.tpm === undefined ? {} : { tpm: a.tpm }),
          ...(a.rpm === undefined ? {} : { rpm: a.rpm }),
          adaptive: a.adaptive === false ? false : { ...a.adaptive },
          maxQuotaPauseMs: a.maxQuotaPauseMs,
        },
      ]),
    ),
  };
}

const configs: Record<string, string> = {
  "the example config": readFileSync(new URL("./full.yaml", import.meta.url), "utf8"),
  "the demo config": DEMO_CONFIG_YAML,
  "accounts, lane-level and pod-level GPU groups, keys, a fallback, a pass-through limit": `
admission: { max_concurrency: 40, max_queued: 10, aging_s: 5 }
auth: { keys: [ { id: k, sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", max_inflight: 3 } ] }
models:
  - name: a
    max_concurrent_requests: 0
    reserve: 3
    gpu_group: lane-gpu
    fallback: b
    breaker: { fail_threshold: 2, base_cooldown_s: 1, max_cooldown_s: 8, backoff_factor: 1.5 }
    pods: [ { url: "http://a:1", max_inflight: 6, gpu_group: pod-gpu }, { url: "http://a:2", max_inflight: 2 } ]
  - name: b
    adaptive: false
    queue_limit: 0
    queue_timeout_s: 250ms
    pods: [ { url: "http://b:1", max_inflight: 1 } ]
gpu_groups: { lane-gpu: { max_inflight: 7 }, pod-gpu: { max_inflight: 5 } }
accounts: { prod: { max_inflight: 4, models: [a, b] } }
`,
};

describe("governorOptions (config → resolved Governor options)", () => {
  for (const [name, text] of Object.entries(configs)) {
    test(`${name}: equals what the library validator resolves from the same settings`, () => {
      const resolved = governorOptions(loadConfigText(text, name));
      assert.ok(isResolvedOptions(resolved));
      const library = resolveGovernorOptions(asLibraryOptions(resolved));
      assert.deepEqual(library.lanes, resolved.lanes);
      assert.deepEqual(library.groups, resolved.groups);
      assert.deepEqual(library.keys, resolved.keys);
      assert.deepEqual(library.accounts, resolved.accounts);
    });
  }

  test("maps a model to a lane on the gateway, account and GPU groups, with its pods", () => {
    const o = governorOptions(
      loadConfigText(
        configs["accounts, lane-level and pod-level GPU groups, keys, a fallback, a pass-through limit"]!,
      ),
    );
    const a = o.lanes.a!;
    assert.equal(a.limit, 8, "max_concurrent_requests 0 = the pods' total");
    assert.equal(a.reserve, 0, "clamped against the written limit 0, as documented");
    assert.deepEqual(a.groups, ["gpu:lane-gpu"], "the gateway bound is the admission option");
    assert.equal(a.account, "prod");
    assert.deepEqual(o.accounts, {
      prod: {
        maxInflight: 4,
        tpm: undefined,
        rpm: undefined,
        tpmReserve: 0,
        rpmReserve: 0,
        adaptive: { floor: 4 },
        maxQuotaPauseMs: 60_000,
      },
    });
    assert.deepEqual(a.pods, [
      { id: "http://a:1", maxInflight: 6, gpuGroup: "gpu:pod-gpu" },
      { id: "http://a:2", maxInflight: 2 },
    ]);
    assert.deepEqual(a.breaker, {
      enabled: true,
      failThreshold: 2,
      baseCooldownMs: 1000,
      maxCooldownMs: 8000,
      backoffFactor: 1.5,
    });
    assert.equal(a.fallback, "b");
    assert.equal(a.agingMs, 5000);
    assert.equal(o.lanes.b!.adaptive, false);
    assert.equal(o.lanes.b!.queueTimeoutMs, 250);
    assert.deepEqual(o.admission, { maxInflight: 40, maxQueued: 10 });
    assert.deepEqual(o.keys.k, { maxInflight: 3, maxPriority: "default" });
  });

  test("is taken by the Governor as it is: resolving resolved options returns them unchanged", () => {
    const o = governorOptions(parseConfig({ models: [{ name: "m", pods: [{ url: "http://x:1" }] }] }));
    assert.equal(resolveGovernorOptions(o), o);
    const gov = new Governor(o);
    try {
      assert.deepEqual(
        gov.snapshot().pods.map((p) => p.id),
        ["http://x:1"],
      );
    } finally {
      gov.close();
    }
  });
});
