/** `tpm_shares` / `rpm_shares` / `share_above` on models and accounts: accepted, defaulted, refused by key path. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { governorOptions } from "./governor-options.js";
import { parseConfig } from "./schema.js";
import { config, invalid } from "./test-helpers.js";

const SHARES = { interactive: 0.5, default: 0.3, bulk: 0.2 };

describe("config: class shares of a bucket", () => {
  test("a model's tpm_shares reach its lane, share_above with them; a class left out has none", () => {
    const c = parseConfig(
      config(
        {},
        { tpm: 60_000, tpm_shares: SHARES, share_above: 0.9, rpm: 100, rpm_shares: { interactive: 1 } },
      ),
    );
    const m = c.models[0]!;
    assert.deepEqual(m.tpmShares, SHARES);
    assert.deepEqual(m.rpmShares, { interactive: 1, default: 0, bulk: 0 });
    assert.equal(m.shareAbove, 0.9);
    const lane = governorOptions(c).lanes.m!;
    assert.deepEqual(lane.tpmShares, SHARES);
    assert.equal(lane.shareAbove, 0.9);
  });

  test("an account's shares reach the account", () => {
    const c = parseConfig(config({ accounts: { p: { tpm: 60_000, tpm_shares: SHARES, models: ["m"] } } }));
    assert.deepEqual(c.accounts.p?.tpmShares, SHARES);
    assert.deepEqual(governorOptions(c).accounts?.p?.tpmShares, SHARES);
  });

  test("refusals name the key path", () => {
    const cases: [unknown, string, RegExp][] = [
      [
        config({}, { tpm: 1000, tpm_shares: { interactive: 0.5, bulk: 0.4 } }),
        "models[0].tpm_shares",
        /add up to 1/,
      ],
      [
        config({}, { tpm: 1000, tpm_shares: { interactive: 1.5, bulk: -0.5 } }),
        "models[0].tpm_shares.bulk",
        /≥ 0/,
      ],
      [
        config({}, { tpm: 1000, tpm_shares: { urgent: 1 } }),
        "models[0].tpm_shares.urgent",
        /interactive, default, bulk/,
      ],
      [config({}, { tpm_shares: SHARES }), "models[0].tpm_shares", /without tpm/],
      [config({}, { tpm: 1000, share_above: 0.9 }), "models[0].share_above", /only with tpm_shares/],
      [config({}, { tpm: 1000, tpm_shares: SHARES, share_above: 1.5 }), "models[0].share_above", /\(0, 1\]/],
      [
        config({ accounts: { p: { tpm: 1000, tpm_shares: { default: 0.2 }, models: ["m"] } } }),
        "accounts.p.tpm_shares",
        /add up to 1/,
      ],
      [
        config({ store: "redis://127.0.0.1:6379" }, { tpm: 1000, tpm_shares: SHARES }),
        "models[0].tpm_shares",
        /fleet store/,
      ],
    ];
    for (const [input, path, expected] of cases) {
      const e = invalid(input);
      const issue = e.issues.find((i) => i.path === path);
      assert.ok(issue, `${path}: got ${e.issues.map((i) => `${i.path}: ${i.expected}`).join("; ")}`);
      assert.match(issue.expected, expected, path);
    }
  });
});
