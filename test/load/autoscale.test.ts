/**
 * `sluice load autoscale` short: an autoscaler grows the gateway from one replica to four
 * (worker threads, each its own store) in front of one provider account with a concurrency
 * limit, as seed 004's feedback loop did. With per-process limits the replicas together send more
 * than the account carries and it answers 429; with one Redis store they never put more than the
 * limit on it. Needs Redis (REDIS_URL, default 127.0.0.1:6379): skipped without it, failed under
 * CI=true. The autoscaler's decision itself is test/load/autoscaler.test.ts's.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  AUTOSCALER,
  autoscale,
  autoscaleProfile,
  RedisUnavailableError,
  requireRedis,
} from "../../src/load/profiles/autoscale.js";
import { runProfile } from "../../src/load/runner.js";

describe("sluice load autoscale, short run", { timeout: 120_000 }, () => {
  test("per-process limits multiply into provider 429s; the Redis store holds the account's limit", async (t) => {
    try {
      await requireRedis();
    } catch (e) {
      if (process.env.CI === "true" || !(e instanceof RedisUnavailableError)) throw e;
      t.skip((e as Error).message);
      return;
    }
    // Looks every 4 s of seed time for 40 s: ten looks for the three replicas to add.
    const profile = autoscaleProfile(4, 40_000, undefined, { ...AUTOSCALER, everyMs: 4_000 });
    const r = await runProfile({ profile, scale: 0.05 });
    assert.ok(r.sluice && r.direct, "both runs");
    assert.equal(r.sluice.error, undefined, `Redis store: ${r.sluice.error}`);
    assert.equal(r.direct.error, undefined, `per process: ${r.direct.error}`);
    assert.equal(r.sluice.leaked_reservations, 0, r.sluice.leak_detail.join("; "));
    assert.equal(r.sluice.bytes_mismatches, 0);
    assert.equal(r.direct.bytes_mismatches, 0);

    assert.ok(r.direct.throttles > 0, "per process: the provider answered 429");
    assert.equal(r.sluice.throttles, 0, "Redis store: no provider 429");
    assert.ok(r.sluice.upstream_max_inflight <= 8, `Redis store: ${r.sluice.upstream_max_inflight} at once`);
    assert.ok(r.sluice.completed > 0);
    for (const c of [...profile.checks(r.sluice, 0.05), ...profile.directChecks(r.direct, 0.05)]) {
      assert.ok(c.met, `${c.name}: ${c.value} (target ${c.target})`);
    }
    // Seed 004's shape: one replica, then one more at a time as the latency stays high, to four —
    // in both runs (the clients' latency is above the target whatever the store).
    for (const run of [r.sluice, r.direct]) {
      const steps = run.replicas_over_time ?? [];
      const counts = steps.map((s) => s.replicas);
      assert.deepEqual(counts, [1, 2, 3, 4], `${run.target}: ${JSON.stringify(steps)}`);
      assert.equal(steps[0]!.at_ms, 0);
      for (let i = 1; i < steps.length; i++) {
        assert.ok(steps[i]!.at_ms > steps[i - 1]!.at_ms, `${run.target}: replicas added over time`);
        assert.ok(
          steps[i]!.signal_ms === null || steps[i]!.signal_ms! > 4_000 * 0.05,
          "added on high latency",
        );
      }
    }
  });

  test("the profile grows 1 → 10 replicas, not ten from the start", () => {
    assert.equal(autoscale.replicas, 10);
    assert.deepEqual(autoscale.autoscale, { from: 1, everyMs: 6_000, latencyMs: 4_000 });
    // Enough looks in the offering for nine additions, one per look.
    assert.ok(autoscale.durationMs / autoscale.autoscale!.everyMs >= 9 + 3);
  });

  test("requireRedis names the URL it tried", async () => {
    await assert.rejects(requireRedis("redis://127.0.0.1:1"), (e: unknown) => {
      assert.ok(e instanceof RedisUnavailableError);
      assert.equal(e.url, "redis://127.0.0.1:1");
      assert.match(e.message, /start redis-server or set REDIS_URL/);
      return true;
    });
  });
});
