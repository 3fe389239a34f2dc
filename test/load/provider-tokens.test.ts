/**
 * `sluice load provider-tokens` short: small and large calls offered to a tokens-per-minute
 * provider account at several times what it allows, for a few seconds. Straight to the provider it
 * answers 429; through sluice (`accounts.provider.tpm` = the account's) it never has to, every
 * answer's bytes are the provider's, and no reservation is left after the drain. Real time (a
 * token bucket's minute cannot be scaled: src/load/time-scale.ts), so the account is small and the
 * provider quick: the run's few seconds hold several times its bucket.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseConfig } from "../../src/config/schema.js";
import { providerTokensProfile } from "../../src/load/profiles/provider-tokens.js";
import { runProfile } from "../../src/load/runner.js";
import { UnscalableProfileError } from "../../src/load/time-scale.js";

/**
 * Small, so that the refill while the first call is on its way (tpm × its transit: the gap
 * between sluice's bucket and the provider's, docs/load.md) stays far below the 40 tokens a small
 * call's estimate exceeds its charge by, even on a busy machine: 0.1 token per ms.
 */
const TPM = 6_000;

describe("sluice load provider-tokens, short run", { timeout: 60_000 }, () => {
  test("straight to the provider it throttles; through sluice never a provider 429, exact bytes, nothing leaked", async () => {
    // ~22 000 tokens a second offered (large calls ~4 600 each) against 6 000 a minute.
    const profile = providerTokensProfile({
      tpm: TPM,
      durationMs: 2_000,
      smallPerSecond: 20,
      largePerSecond: 4,
      queueTimeoutS: 1,
      retries: false,
      service: { ms: 20, perOutputTokenMs: 0.1 },
    });
    const r = await runProfile({ profile, scale: 1 });
    assert.ok(r.sluice && r.direct, "both runs");
    assert.equal(r.sluice.error, undefined, `through sluice: ${r.sluice.error}`);
    assert.equal(r.direct.error, undefined, `straight: ${r.direct.error}`);

    assert.equal(r.sluice.leaked_reservations, 0, r.sluice.leak_detail.join("; "));
    assert.equal(r.sluice.bytes_mismatches, 0);
    assert.equal(r.direct.bytes_mismatches, 0);
    assert.ok(r.direct.completed > 0 && r.sluice.completed > 0, "both runs had answers to check");

    const [through] = r.sluice.accounts;
    const [straight] = r.direct.accounts;
    assert.ok(through && straight, "the provider's own counts, both runs");
    assert.ok(
      straight.throttled.tokens > 0,
      "straight: the provider answered 429 past its tokens per minute",
    );
    assert.equal(r.direct.throttles, straight.throttled.tokens + straight.throttled.requests);
    assert.deepEqual(through.throttled, { tokens: 0, requests: 0, inflight: 0 }, "through sluice: no 429");
    assert.equal(r.sluice.throttles, 0);

    // What the account allows over the run: a full bucket + the refill. Sluice kept within it;
    // straight, clients asked for far more.
    assert.ok(
      through.sustained_asked_per_minute <= TPM,
      `through: ${through.sustained_asked_per_minute}/min`,
    );
    assert.ok(
      straight.sustained_asked_per_minute > TPM,
      `straight: ${straight.sustained_asked_per_minute}/min`,
    );
    assert.ok(r.sluice.sluice_refusals > 0, "what the account could not carry in time sluice refused itself");
    for (const c of [...profile.checks(r.sluice, 1), ...profile.directChecks(r.direct, 1)]) {
      assert.ok(c.met, `${c.name}: ${c.value} (target ${c.target})`);
    }
  });

  test("sluice's account holds the provider's own tokens per minute", () => {
    const profile = providerTokensProfile({ tpm: 12_345 });
    const config = parseConfig(profile.config({ "gpt-sim": ["http://127.0.0.1:9"] }, (s) => s));
    const [pod] = profile.pods;
    assert.equal(pod?.kind, "provider");
    assert.equal(pod.account.tpm, 12_345);
    assert.equal(config.accounts.provider?.tpm, 12_345);
  });

  test("refuses a time scale: a token bucket's minute is a real one", async () => {
    await assert.rejects(runProfile({ profile: providerTokensProfile(), scale: 0.1 }), (e: unknown) => {
      assert.ok(e instanceof UnscalableProfileError);
      assert.equal(e.scale, 0.1);
      assert.match(e.message, /real time only/);
      return true;
    });
  });
});
