/** parseConfig: every way a config is refused, each error naming the key path, what was expected and what arrived. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigError, isConfigError } from "../core/errors.js";
import { ConfigErrors } from "./issues.js";
import { parseConfig } from "./schema.js";
import { config, DIGEST, invalid } from "./test-helpers.js";

describe("parseConfig refusals", () => {
  const cases: { name: string; input: unknown; path: string; expected: RegExp; received?: unknown }[] = [
    {
      name: "a negative max_concurrency",
      input: config({ admission: { max_concurrency: -1 } }),
      path: "admission.max_concurrency",
      expected: /^an integer ≥ 1$/,
      received: -1,
    },
    {
      name: "a negative max_concurrent_requests",
      input: config({}, { max_concurrent_requests: -1 }),
      path: "models[0].max_concurrent_requests",
      expected: /^an integer ≥ 0$/,
      received: -1,
    },
    {
      name: "a fraction where an integer is required",
      input: config({}, { queue_limit: 2.5 }),
      path: "models[0].queue_limit",
      expected: /^an integer ≥ 0$/,
      received: 2.5,
    },
    {
      name: "a backoff_factor below 1",
      input: config({}, { breaker: { backoff_factor: 0.5 } }),
      path: "models[0].breaker.backoff_factor",
      expected: /^a number ≥ 1$/,
      received: 0.5,
    },
    {
      name: "a fallback to an unknown model",
      input: config({}, { fallback: "nope" }),
      path: "models[0].fallback",
      expected: /^the name of a model in models \(m\)$/,
      received: "nope",
    },
    {
      name: "a fallback to itself",
      input: config({}, { fallback: "m" }),
      path: "models[0].fallback",
      expected: /another model/,
    },
    {
      name: "a route to an unknown model",
      input: config({ routes: [{ match: "/ocr/", model: "ocr" }] }),
      path: "routes[0].model",
      expected: /^the name of a model in models/,
      received: "ocr",
    },
    {
      name: "a route that would capture the gateway's own paths",
      input: config({ routes: [{ match: "/", model: "m" }] }),
      path: "routes[0].match",
      expected: /does not capture the gateway's own paths/,
    },
    {
      name: "a duplicated model name",
      input: { models: [config(), config()].flatMap((c) => (c as { models: unknown[] }).models) },
      path: "models[1].name",
      expected: /^a name not already used by models\[0\]$/,
      received: "m",
    },
    {
      name: "a sha256 that is not 64 hex characters",
      input: config({ auth: { keys: [{ id: "k", sha256: "abc" }] } }),
      path: "auth.keys[0].sha256",
      expected: /^a SHA-256 digest: 64 hex characters$/,
      received: "abc",
    },
    {
      name: "a pod URL that is not http(s)",
      input: config({}, { pods: [{ url: "ftp://10.0.0.1" }] }),
      path: "models[0].pods[0].url",
      expected: /^an http\(s\) URL$/,
      received: "ftp://10.0.0.1",
    },
    {
      name: "a pod URL with credentials",
      input: config({}, { pods: [{ url: "http://user:pw@10.0.0.1" }] }),
      path: "models[0].pods[0].url",
      expected: /without credentials/,
    },
    {
      name: "a size in unknown units",
      input: config({ admission: { max_body_bytes: "20 Mebibytes" } }),
      path: "admission.max_body_bytes",
      expected: /^a size such as 20MiB/,
      received: "20 Mebibytes",
    },
    {
      name: "a duration that is not one",
      input: config({}, { queue_timeout_s: "soon" }),
      path: "models[0].queue_timeout_s",
      expected: /^a duration such as 30s/,
      received: "soon",
    },
    {
      name: "a zero timeout",
      input: config({ admission: { queue_timeout_s: 0 } }),
      path: "admission.queue_timeout_s",
      expected: /^a duration > 0/,
      received: 0,
    },
    {
      name: "a timeout past the longest timer Node can set (it would fire at once)",
      input: config({}, { queue_timeout_s: "600h" }),
      path: "models[0].queue_timeout_s",
      expected: /^a duration up to 2147483647 ms/,
      received: "600h",
    },
    {
      name: "a mode outside the allowed set",
      input: config({ admission: { mode: "strict" } }),
      path: "admission.mode",
      expected: /^one of enforce, shadow$/,
    },
    {
      name: "a string where a number is required",
      input: config({}, { reserve: "one" }),
      path: "models[0].reserve",
      expected: /^an integer ≥ 0$/,
    },
    {
      name: "an upstream key where its variable name belongs",
      input: config({}, { upstream_api_key_env: "sk-abcdefghijklmnopqrstuvwxyz" }),
      path: "models[0].upstream_api_key_env",
      expected: /^an environment variable name matching/,
    },
    {
      name: "a model without pods",
      input: config({}, { pods: [] }),
      path: "models[0].pods",
      expected: /at least one pod/,
    },
    {
      name: "a config without models",
      input: {},
      path: "models",
      expected: /at least one model/,
    },
    {
      name: "a config that is not a mapping",
      input: ["listen"],
      path: "(root)",
      expected: /^a mapping with listen/,
    },
    {
      name: "a model in the same bounded GPU group as one of its pods",
      input: config(
        { gpu_groups: { gb10: { max_inflight: 8 } } },
        { gpu_group: "gb10", pods: [{ url: "http://x:1", gpu_group: "gb10" }] },
      ),
      path: "models[0].gpu_group",
      expected: /^a group none of this model's pods is in/,
    },
    {
      name: "an account naming an unknown model",
      input: config({ accounts: { "openai-prod": { max_inflight: 4, models: ["gpt-x"] } } }),
      path: "accounts.openai-prod.models[0]",
      expected: /^the name of a model/,
      received: "gpt-x",
    },
    {
      name: "a max_cooldown_s below base_cooldown_s",
      input: config({}, { breaker: { base_cooldown_s: 5, max_cooldown_s: 1 } }),
      path: "models[0].breaker.max_cooldown_s",
      expected: /^a duration ≥ base_cooldown_s \(5000 ms\)$/,
    },
    {
      name: "a breaker switch that is not a boolean",
      input: config({}, { breaker: { enabled: "no" } }),
      path: "models[0].breaker.enabled",
      expected: /^true or false$/,
      received: "no",
    },
    {
      name: "a pod shared by two models whose breakers differ (one URL is one breaker)",
      input: {
        models: [
          { name: "a", pods: [{ url: "http://10.0.0.1:8000" }] },
          { name: "b", breaker: { enabled: false }, pods: [{ url: "http://10.0.0.1:8000" }] },
        ],
      },
      path: "models[1].breaker",
      expected: /^the same breaker as models\[0\] \(both list http:\/\/10\.0\.0\.1:8000/,
    },
    {
      name: "max_buffered_bytes smaller than max_body_bytes",
      input: config({ admission: { max_body_bytes: "2MiB", max_buffered_bytes: "1MiB" } }),
      path: "admission.max_buffered_bytes",
      expected: /^a size ≥ admission.max_body_bytes/,
    },
  ];

  for (const c of cases) {
    test(`refuses ${c.name}, naming ${c.path}`, () => {
      const e = invalid(c.input);
      assert.equal(e.path, c.path);
      assert.match(e.expected, c.expected);
      if ("received" in c) assert.deepEqual(e.received, c.received);
      assert.ok(e.message.startsWith(`${c.path}: `), e.message);
    });
  }

  test("reports an unknown key with the nearest known key", () => {
    const e = invalid(config({}, { max_concurent_requests: 3 }));
    assert.equal(e.path, "models[0].max_concurent_requests");
    assert.equal(
      e.message,
      'models[0].max_concurent_requests: unknown key (did you mean "max_concurrent_requests"?)',
    );
    assert.equal(e.received, "max_concurent_requests");
    assert.equal(e.hint, 'did you mean "max_concurrent_requests"?');
  });

  test("suggests the snake_case key for a camelCase one", () => {
    const e = invalid(config({ admission: { maxConcurrency: 3 } }));
    assert.equal(e.hint, 'did you mean "max_concurrency"?');
  });

  test("lists the known keys when no key is close", () => {
    const e = invalid(config({ log: { verbosity: 3 } }));
    assert.equal(e.hint, "known keys: level");
  });

  test("answers a plaintext client key by asking for its SHA-256 digest", () => {
    const e = invalid(config({ auth: { keys: [{ id: "k", key: "sk-123", sha256: DIGEST }] } }));
    assert.equal(e.path, "auth.keys[0].key");
    assert.match(e.hint ?? "", /never holds a plaintext key/);
  });

  test("refuses a fallback chain that loops", () => {
    const pods = [{ url: "http://x:1" }];
    const e = invalid({
      models: [
        { name: "a", fallback: "b", pods },
        { name: "b", fallback: "a", pods },
      ],
    });
    assert.equal(e.path, "models[0].fallback");
    assert.match(e.hint ?? "", /a → b → a/);
  });

  test("collects every problem and throws a ConfigError for the first", () => {
    const e = invalid(config({ admission: { max_concurrency: 0, aging_s: -1 } }, { reserve: "one" }));
    assert.ok(e instanceof ConfigError);
    assert.ok(isConfigError(e));
    assert.deepEqual(
      e.issues.map((i) => i.path),
      ["admission.max_concurrency", "admission.aging_s", "models[0].reserve"],
    );
    assert.equal(e.path, e.issues[0]?.path);
    assert.match(e.message, /3 problems/);
  });

  test("names the source in every message when given one", () => {
    try {
      parseConfig(config({}, { reserve: -1 }), "sluice.json");
      assert.fail("expected a refusal");
    } catch (e) {
      assert.ok(e instanceof ConfigErrors);
      assert.match(
        e.message,
        /^models\[0\]\.reserve: expected an integer ≥ 0, got -1 \(number\) \(at sluice\.json\)$/,
      );
    }
  });
});
