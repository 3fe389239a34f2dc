/**
 * Where one bound makes another unreachable the loader says so: a warning per case, naming the key
 * and both numbers, returned as `config.warnings` (and to `onWarning`) so `sluice serve` can print
 * them at start and the gateway can show them.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { DEMO_CONFIG_YAML } from "./demo.js";
import { loadConfigText } from "./load.js";
import { type ConfigWarning, parseConfig } from "./schema.js";

function config(extra: Record<string, unknown> = {}, model: Record<string, unknown> = {}): unknown {
  return { models: [{ name: "m", pods: [{ url: "http://10.0.0.1:8000" }], ...model }], ...extra };
}

/** The warnings of a valid config, by path. */
function warnings(input: unknown): Map<string, string> {
  const seen: ConfigWarning[] = [];
  const c = parseConfig(input, undefined, { onWarning: (w) => seen.push(w) });
  assert.deepEqual(
    c.warnings,
    seen.map((w) => `${w.path}: ${w.message}`),
    "config.warnings holds what onWarning was told",
  );
  return new Map(seen.map((w) => [w.path, w.message]));
}

describe("warnings about unreachable bounds", () => {
  test("a token budget that lets few of a lane's slots work names both numbers and the default that fills it", () => {
    const w = warnings(config({}, { max_concurrent_requests: 32, tpm: 20_000 }));
    assert.equal(
      w.get("models[0].tpm"),
      "20000 tokens/min lets at most 4 of model m's 32 slots work at once when calls name no max_tokens " +
        "(each reserves default_max_tokens 4096 plus its prompt; embeddings reserve their input only): " +
        "set models[0].default_max_tokens to the answers' usual length (625 or less fills the lane) or raise tpm to 131072",
    );
    // A default sized to the budget, or an account bucket too small for it, is said where it binds.
    assert.equal(
      warnings(config({}, { max_concurrent_requests: 32, tpm: 20_000, default_max_tokens: 625 })).get(
        "models[0].tpm",
      ),
      undefined,
    );
    const account = warnings(
      config(
        { accounts: { prod: { tpm: 10_000, models: ["m"] } } },
        { max_concurrent_requests: 8, default_max_tokens: 2000 },
      ),
    );
    assert.match(
      account.get("accounts.prod.tpm") ?? "",
      /^10000 tokens\/min lets at most 5 of model m's 8 slots work/,
    );
  });

  test("a model's queue of 128 behind the default gateway bound of 32 + 32 can never fill (the example config)", () => {
    const text = readFileSync(new URL("../../test/config/full.yaml", import.meta.url), "utf8");
    const c = loadConfigText(text, "full.yaml");
    const line = c.warnings.find((w) => w.startsWith("models[0].queue_limit: "));
    assert.equal(
      line,
      "models[0].queue_limit: a queue of 128 can never fill: the gateway admits 64 requests at most " +
        "(admission.max_concurrency 32 + max_queued 32), so with this model's 32 slots busy at most 32 can wait; " +
        "raise admission.max_queued to 128 or lower queue_limit to 32",
    );
  });

  test("a queue the gateway could hold only while the model's pods are narrowed or tripped says so", () => {
    const w = warnings(config({}, { max_concurrent_requests: 32, queue_limit: 40 }));
    assert.match(
      w.get("models[0].queue_limit") ?? "",
      /^a queue of 40 fills only while this model runs fewer than 32 calls \(its pods narrowed or tripped\): the gateway admits 64/,
    );
  });

  test("the queue warning goes once the gateway admits enough", () => {
    const model = { max_concurrent_requests: 32, queue_limit: 128 };
    assert.ok(warnings(config({}, model)).has("models[0].queue_limit"));
    assert.ok(!warnings(config({ admission: { max_queued: 128 } }, model)).has("models[0].queue_limit"));
  });

  test("defaults alone are not questioned: the operator wrote none of the numbers", () => {
    assert.deepEqual([...warnings(config()).keys()], []);
  });

  test("a lane limit above the sum of its pods' max_inflight", () => {
    const w = warnings(
      config({}, { max_concurrent_requests: 24, pods: [{ url: "http://a:1", max_inflight: 8 }] }),
    );
    assert.equal(
      w.get("models[0].max_concurrent_requests"),
      "24 is above the sum of its pods' max_inflight (8), so at most 8 of its calls are ever in flight",
    );
  });

  test("a lane limit above admission.max_concurrency", () => {
    const w = warnings(
      config({ admission: { max_concurrency: 16, max_queued: 256 } }, { max_concurrent_requests: 24 }),
    );
    assert.match(
      w.get("models[0].max_concurrent_requests") ?? "",
      /^24 is above admission\.max_concurrency \(16\): the gateway runs at most 16 calls at once/,
    );
  });

  test("a reserve at or above the limit is clamped, with a warning", () => {
    const w = warnings(config({}, { max_concurrent_requests: 2, reserve: 2 }));
    assert.equal(w.get("models[0].reserve"), "reserve 2 clamped to 1 (max_concurrent_requests 2 − 1)");
  });

  test("a pod's max_inflight above its GPU group's bound", () => {
    const w = warnings(
      config(
        { gpu_groups: { gb10: { max_inflight: 10 } } },
        { pods: [{ url: "http://a:1", max_inflight: 16, gpu_group: "gb10" }] },
      ),
    );
    assert.equal(
      w.get("models[0].pods[0].max_inflight"),
      "16 is above gpu_groups.gb10.max_inflight (10), so this pod never has more than 10 in flight",
    );
  });

  test("a model's limit above its lane-level GPU group's bound, and a model tag no group lists", () => {
    const bounded = warnings(
      config(
        { gpu_groups: { gb10: { max_inflight: 10 } } },
        { max_concurrent_requests: 16, gpu_group: "gb10" },
      ),
    );
    assert.match(
      bounded.get("models[0].max_concurrent_requests") ?? "",
      /^16 is above gpu_groups\.gb10\.max_inflight \(10\)/,
    );
    const unlisted = warnings(config({}, { gpu_group: "gb10" }));
    assert.equal(
      unlisted.get("models[0].gpu_group"),
      "gb10 is not listed in gpu_groups, so it bounds nothing",
    );
  });

  test("an account bound its models can never reach", () => {
    const w = warnings(
      config({ accounts: { prod: { max_inflight: 40, models: ["m"] } } }, { max_concurrent_requests: 8 }),
    );
    assert.match(
      w.get("accounts.prod.max_inflight") ?? "",
      /^40 never binds: its models \(m\) run at most 8 calls at once/,
    );
    const binding = warnings(
      config({ accounts: { prod: { max_inflight: 4, models: ["m"] } } }, { max_concurrent_requests: 8 }),
    );
    assert.ok(!binding.has("accounts.prod.max_inflight"));
  });

  test("a key bound above everything the gateway admits", () => {
    const digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    const w = warnings(config({ auth: { keys: [{ id: "k", sha256: digest, max_inflight: 65 }] } }));
    assert.match(
      w.get("auth.keys[0].max_inflight") ?? "",
      /^65 never binds: it counts a key's calls in flight and queued, and the gateway admits 64/,
    );
  });

  test("the demo config and the example at the top of docs/config.md have nothing to warn about", () => {
    assert.deepEqual(loadConfigText(DEMO_CONFIG_YAML, "demo").warnings, []);
    const doc = readFileSync(new URL("../../docs/config.md", import.meta.url), "utf8");
    const example = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1];
    assert.ok(example !== undefined, "docs/config.md opens with a YAML example");
    assert.deepEqual(loadConfigText(example, "docs/config.md").warnings, []);
  });
});
