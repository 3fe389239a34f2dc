/**
 * The token and request budgets in the config (issue 10): `tpm`, `rpm`, `default_max_tokens` per
 * model; accounts with `tpm`, `rpm`, `adaptive`, `max_quota_pause_s`; the buckets' interactive
 * reserve (`tpm_reserve`, `rpm_reserve`, by default the reserve share); what each becomes in the
 * Governor's options, and what is refused.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { governorOptions } from "../../src/config/governor-options.js";
import { ConfigErrors } from "../../src/config/issues.js";
import { parseConfig } from "../../src/config/schema.js";
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
      // The interactive reserve by default: the model's reserve share, 1 of its 32 slots.
      assert.deepEqual(snap.tokens, { per_minute: 400_000, available: 400_000, used_1m: 0, reserve: 12_500 });
      assert.deepEqual(snap.requests, { per_minute: 600, available: 600, used_1m: 0, reserve: 18 });
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
      // Its models' reserve share (1 of 32 slots each): ⌊2 000 000 / 32⌋, ⌊5000 / 32⌋.
      tpmReserve: 62_500,
      rpmReserve: 156,
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

describe("config: the interactive reserve of token and request buckets", () => {
  const reserves = (m: { tpmReserve?: number; rpmReserve?: number }) => [m.tpmReserve, m.rpmReserve];

  test("by default a model keeps its reserve share of each bucket: reserve ÷ max_concurrent_requests", () => {
    const c = parseConfig({
      models: [model({ max_concurrent_requests: 8, reserve: 2, tpm: 100_000, rpm: 100 })],
    });
    assert.deepEqual(reserves(c.models[0]!), [25_000, 25]);
    const lane = governorOptions(c).lanes.m!;
    assert.deepEqual([lane.tpmReserve, lane.rpmReserve], [25_000, 25], "what the Governor runs on");
  });

  test("none for reserve 0 or an unbounded model (max_concurrent_requests 0)", () => {
    const none = parseConfig({
      models: [
        model({ max_concurrent_requests: 8, reserve: 0, tpm: 100_000 }, "a"),
        model({ max_concurrent_requests: 0, tpm: 100_000, rpm: 60 }, "b"),
      ],
    });
    assert.deepEqual(reserves(none.models[0]!), [0, undefined]);
    assert.deepEqual(reserves(none.models[1]!), [0, 0]);
  });

  test("tpm_reserve and rpm_reserve set it in tokens and requests, on a model and on an account", () => {
    const c = parseConfig({
      models: [
        model({ max_concurrent_requests: 8, tpm: 100_000, rpm: 100, tpm_reserve: 4000, rpm_reserve: 0 }),
      ],
      accounts: { prod: { tpm: 1_000_000, rpm: 1000, tpm_reserve: 50_000, models: ["m"] } },
    });
    assert.deepEqual(reserves(c.models[0]!), [4000, 0]);
    // The account's rpm_reserve is unwritten: the model's share, 1 of 8 slots.
    assert.deepEqual(reserves(c.accounts.prod!), [50_000, 125]);
    const o = governorOptions(c);
    assert.deepEqual([o.accounts!.prod!.tpmReserve, o.accounts!.prod!.rpmReserve], [50_000, 125]);
  });

  test("an account keeps the largest share among its models", () => {
    const c = parseConfig({
      models: [
        model({ max_concurrent_requests: 10, reserve: 1 }, "small"),
        model({ max_concurrent_requests: 4, reserve: 1 }, "large"),
        model({ max_concurrent_requests: 0 }, "unbounded"),
      ],
      accounts: { prod: { tpm: 100_000, models: ["small", "large", "unbounded"] } },
    });
    assert.equal(c.accounts.prod!.tpmReserve, 25_000, "¼ (large), not ⅒ (small) or 0 (unbounded)");
  });

  test("at or above the capacity it is clamped to capacity − 1, with a warning naming the key", () => {
    const c = parseConfig({
      models: [model({ tpm: 1000, tpm_reserve: 1000, rpm: 10, rpm_reserve: 50 })],
      accounts: { prod: { tpm: 500, tpm_reserve: 9000, models: ["m"] } },
    });
    assert.deepEqual(reserves(c.models[0]!), [999, 9]);
    assert.equal(c.accounts.prod!.tpmReserve, 499);
    assert.deepEqual(
      c.warnings.filter((w) => w.includes("_reserve")),
      [
        "models[0].tpm_reserve: tpm_reserve 1000 clamped to 999 (tpm 1000 − 1: other classes keep some of the bucket)",
        "models[0].rpm_reserve: rpm_reserve 50 clamped to 9 (rpm 10 − 1: other classes keep some of the bucket)",
        "accounts.prod.tpm_reserve: tpm_reserve 9000 clamped to 499 (tpm 500 − 1: other classes keep some of the bucket)",
      ],
    );
  });

  test("refused: a negative or fractional reserve, and one beside no bucket (it would keep nothing)", () => {
    const cases: [unknown, string, RegExp][] = [
      [{ models: [model({ tpm: 1000, tpm_reserve: -1 })] }, "models[0].tpm_reserve", /integer|≥ 0/],
      [{ models: [model({ rpm: 10, rpm_reserve: 1.5 })] }, "models[0].rpm_reserve", /integer|≥ 0/],
      [{ models: [model({ tpm_reserve: 100 })] }, "models[0].tpm_reserve", /without tpm/],
      [
        { models: [model()], accounts: { p: { tpm: 1000, rpm_reserve: 1, models: ["m"] } } },
        "accounts.p.rpm_reserve",
        /without rpm/,
      ],
    ];
    for (const [input, path, expected] of cases) {
      const e = refused(input);
      assert.equal(e.path, path, JSON.stringify(input));
      assert.match(e.expected, expected);
    }
  });
});
