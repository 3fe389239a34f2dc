/**
 * Keys that would be accepted and change nothing are refused, each saying why and what to do
 * instead: a user must never believe a bound protects them when nothing enforces it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertUpstreamKeys } from "./checks.js";
import { ConfigErrors } from "./issues.js";
import { loadConfigText } from "./load.js";
import { parseConfig } from "./schema.js";
import { config, invalid } from "./test-helpers.js";

describe("the store and fleet mode", () => {
  test("store: redis://… and rediss://… select the fleet store, with the fleet's defaults", () => {
    const c = parseConfig(config({ store: "redis://10.0.0.2:6379/0" }));
    assert.deepEqual(c.store, { kind: "redis", url: "redis://10.0.0.2:6379/0" });
    assert.deepEqual(c.fleet, {
      leaseTtlMs: 15_000,
      onStoreError: "local",
      expectedReplicas: 2,
      prefix: "sluice",
    });
    assert.equal(parseConfig(config({ store: "rediss://cache.internal:6380" })).store.kind, "redis");
  });

  test("fleet settings are read with a Redis store", () => {
    const c = parseConfig(
      config({
        store: "redis://r:6379",
        fleet: { lease_ttl_s: 6, on_store_error: "closed", expected_replicas: 4 },
      }),
    );
    assert.deepEqual(c.fleet, {
      leaseTtlMs: 6000,
      onStoreError: "closed",
      expectedReplicas: 4,
      prefix: "sluice",
    });
  });

  test("fleet settings with store: memory are refused (they would do nothing)", () => {
    const e = invalid(config({ fleet: { lease_ttl_s: 10 } }));
    assert.equal(e.path, "fleet.lease_ttl_s");
    assert.match(e.expected, /no fleet settings with store: memory/);
  });

  test("a per-key bound is accepted with a Redis store (shared across replicas: src/store/redis/keys.ts)", () => {
    const c = parseConfig(
      config({
        store: "redis://r:6379",
        auth: { keys: [{ id: "k", sha256: "a".repeat(64), max_inflight: 3 }] },
      }),
    );
    assert.equal(c.store.kind, "redis");
    assert.equal(c.auth.keys[0]!.maxInflight, 3);
  });

  test("token and request budgets and accounts are accepted with a Redis store (they are shared)", () => {
    const c = parseConfig(
      config(
        {
          store: "redis://r:6379",
          accounts: { prod: { max_inflight: 8, tpm: 90_000, rpm: 600, models: ["m"] } },
        },
        { tpm: 1000, rpm: 10 },
      ),
    );
    assert.equal(c.store.kind, "redis");
    assert.equal(c.models[0]!.tpm, 1000);
    assert.equal(c.models[0]!.rpm, 10);
    assert.equal(c.accounts.prod!.tpm, 90_000);
  });

  test("an invalid store is reported without the password it may carry", () => {
    const e = invalid(config({ store: "redis://:s3cret@bad host:6379" }));
    assert.equal(e.path, "store");
    assert.ok(!e.message.includes("s3cret"), e.message);
    const other = invalid(config({ store: "etcd://x" }));
    assert.match(other.expected, /^memory, or a Redis URL/);
  });

  test("the loader gives the line of a fleet key that does nothing", () => {
    const text = "models:\n  - name: m\n    pods: [ { url: 'http://x:1' } ]\nfleet:\n  lease_ttl_s: 10\n";
    assert.throws(
      () => loadConfigText(text, "sluice.yaml"),
      (e: unknown) => e instanceof ConfigErrors && /line 5/.test(e.message),
    );
  });

  test("leaving the keys out, or writing them with no value, is fine", () => {
    assert.doesNotThrow(() => parseConfig(config({ fleet: null })));
  });
});

describe("keys that would change nothing", () => {
  test("parse_permits is an unknown key that says why it was removed and what bounds parsing", () => {
    const e = invalid(config({ admission: { parse_permits: 4 } }));
    assert.equal(e.path, "admission.parse_permits");
    assert.match(
      e.message,
      /^admission\.parse_permits: unknown key \(removed: Node parses JSON synchronously/,
    );
    assert.match(e.hint ?? "", /max_body_bytes .* and admission\.max_buffered_bytes/);
  });

  test("an account without max_inflight, tpm or rpm is refused: it would bound nothing", () => {
    const e = invalid(config({ accounts: { prod: { models: ["m"] } } }));
    assert.equal(e.path, "accounts.prod");
    assert.equal(e.expected, "at least one of max_inflight, tpm, rpm");
  });

  test("max_waiting or metrics_poll_s without any pod metrics_url is refused", () => {
    for (const key of ["max_waiting", "metrics_poll_s"]) {
      const e = invalid(config({}, { adaptive: { [key]: 2 } }));
      assert.equal(e.path, `models[0].adaptive.${key}`);
      assert.equal(e.expected, "a pod of this model with a metrics_url");
      assert.equal(e.received, 2);
    }
    const pods = [{ url: "http://x:1", metrics_url: "http://x:1/metrics" }, { url: "http://y:1" }];
    const m = parseConfig(config({}, { adaptive: { max_waiting: 2, metrics_poll_s: "250ms" }, pods }))
      .models[0]!;
    assert.deepEqual(m.adaptive, { floor: 4, maxWaiting: 2, metricsPollMs: 250 });
  });

  test("a metrics_url under adaptive: false is refused: the metrics only narrow an adaptive width", () => {
    const e = invalid(
      config({}, { adaptive: false, pods: [{ url: "http://x:1", metrics_url: "http://x:1/m" }] }),
    );
    assert.equal(e.path, "models[0].pods[0].metrics_url");
  });
});

describe("upstream_api_key_env", () => {
  const keyed = config({}, { upstream_api_key_env: "SLUICE_TEST_KEY" });

  test("naming a variable unset in the environment given refuses the config, naming model and variable", () => {
    for (const env of [{}, { SLUICE_TEST_KEY: "" }]) {
      const e = invalid(keyed, { env });
      assert.equal(e.path, "models[0].upstream_api_key_env");
      assert.equal(e.received, "SLUICE_TEST_KEY");
      assert.match(e.message, /model m sends its upstream key from SLUICE_TEST_KEY, which is not set/);
    }
  });

  test("a set variable passes, and without an environment nothing is checked", () => {
    assert.doesNotThrow(() => parseConfig(keyed, undefined, { env: { SLUICE_TEST_KEY: "sk-1" } }));
    assert.doesNotThrow(() => parseConfig(keyed));
  });

  test("assertUpstreamKeys checks a parsed config against the gateway's environment", () => {
    const c = parseConfig(keyed);
    assert.doesNotThrow(() => assertUpstreamKeys(c, { SLUICE_TEST_KEY: "sk-1" }));
    assert.throws(
      () => assertUpstreamKeys(c, {}),
      (e: unknown) => e instanceof ConfigErrors && e.path === "models[0].upstream_api_key_env",
    );
  });
});
