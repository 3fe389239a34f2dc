/**
 * The token and request budgets in the config (issue 10): `tpm`, `rpm`, `default_max_tokens` per
 * model; accounts with `tpm`, `rpm`, `adaptive`, `max_quota_pause_s`; what each becomes in the
 * Governor's options, and what is refused.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigErrors } from "../../src/config/issues.js";
import { parseConfig } from "../../src/config/schema.js";
import { governorOptions } from "../../src/gateway/governor-config.js";
import { Governor } from "../../src/governor/governor.js";

const model = (extra: Record<string, unknown> = {}, name = "m") => ({
  name,
  pods: [{ url: `http://${name}.local:8000` }],
  ...extra,
});

function refused(input: unknown): ConfigErrors {
  try {
    parseConfig(input);
  } catch (e) {
    assert.ok(e instanceof ConfigErrors);
    return e;
  }
  return assert.fail("expected the config to be refused");
}

describe("config: token and request budgets", () => {
  test("a model's tpm, rpm and default_max_tokens become its lane's buckets", () => {
    const c = parseConfig({ models: [model({ tpm: 400_000, rpm: 600, default_max_tokens: 1024 })] });
    assert.deepEqual(
      [c.models[0]!.tpm, c.models[0]!.rpm, c.models[0]!.defaultMaxTokens],
      [400_000, 600, 1024],
    );
    const lane = governorOptions(c).lanes.m!;
    assert.deepEqual([lane.tpm, lane.rpm], [400_000, 600]);
    const gov = new Governor(governorOptions(c));
    try {
      const snap = gov.snapshot().lanes[0]!;
      assert.deepEqual(snap.tokens, { per_minute: 400_000, available: 400_000, used_1m: 0 });
      assert.deepEqual(snap.requests, { per_minute: 600, available: 600, used_1m: 0 });
    } finally {
      gov.close();
    }
  });

  test("default_max_tokens defaults to 4096; a model without tpm has no bucket", () => {
    const c = parseConfig({ models: [model()] });
    assert.equal(c.models[0]!.defaultMaxTokens, 4096);
    assert.equal(c.models[0]!.tpm, undefined);
    assert.equal(governorOptions(c).lanes.m!.tpm, undefined);
  });

  test("an account with tpm and rpm only: no in-flight cap, not adaptive; its models join it", () => {
    const c = parseConfig({
      models: [model({}, "a"), model({}, "b")],
      accounts: { prod: { tpm: 2_000_000, rpm: 5000, max_quota_pause_s: "30s", models: ["a", "b"] } },
    });
    assert.deepEqual(c.accounts.prod, {
      tpm: 2_000_000,
      rpm: 5000,
      adaptive: false,
      maxQuotaPauseMs: 30_000,
      models: ["a", "b"],
    });
    const o = governorOptions(c);
    assert.deepEqual([o.lanes.a!.account, o.lanes.b!.account], ["prod", "prod"]);
    assert.deepEqual(o.lanes.a!.groups, [], "an account is no longer a concurrency group");
    const gov = new Governor(o);
    try {
      const acct = gov.snapshot().accounts[0]!;
      assert.deepEqual(
        [
          acct.account,
          acct.max_inflight,
          acct.adaptive_cap,
          acct.tokens?.per_minute,
          acct.requests?.per_minute,
        ],
        ["prod", null, null, 2_000_000, 5000],
      );
    } finally {
      gov.close();
    }
  });

  test("an account's adaptive: on by default with max_inflight, a floor, or false", () => {
    const accounts = (a: Record<string, unknown>) =>
      parseConfig({ models: [model()], accounts: { prod: { models: ["m"], ...a } } }).accounts.prod!;
    assert.deepEqual(accounts({ max_inflight: 80 }).adaptive, { floor: 4 });
    assert.deepEqual(accounts({ max_inflight: 80, adaptive: { floor: 10 } }).adaptive, { floor: 10 });
    assert.equal(accounts({ max_inflight: 80, adaptive: false }).adaptive, false);
  });

  test("refused: values below 1, a non-number, adaptive without max_inflight, an account bounding nothing", () => {
    const cases: [unknown, string][] = [
      [{ models: [model({ tpm: 0 })] }, "models[0].tpm"],
      [{ models: [model({ rpm: "lots" })] }, "models[0].rpm"],
      [{ models: [model({ default_max_tokens: 0 })] }, "models[0].default_max_tokens"],
      [{ models: [model()], accounts: { p: { tpm: 1.5, models: ["m"] } } }, "accounts.p.tpm"],
      [
        { models: [model()], accounts: { p: { tpm: 10, adaptive: { floor: 2 }, models: ["m"] } } },
        "accounts.p.adaptive",
      ],
      [{ models: [model()], accounts: { p: { models: ["m"] } } }, "accounts.p"],
      [
        { models: [model()], accounts: { p: { max_inflight: 4, adaptive: { flor: 2 }, models: ["m"] } } },
        "accounts.p.adaptive.flor",
      ],
    ];
    for (const [input, path] of cases) assert.equal(refused(input).path, path, JSON.stringify(input));
  });
});
