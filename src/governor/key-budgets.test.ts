/**
 * Keys' and tenants' token budgets in the Governor (issue 24), on a ManualClock: the key's bucket
 * is reserved at the grant and reconciled with usage like a model's; an arrival it cannot cover
 * now is refused at once naming the bucket and its refill (a key's budget never makes a call
 * wait), so a key at its budget never holds up another key on the same lane; a tenant's keys share
 * one bucket; a provider's 429 pauses the account, never a key's budget; a reload keeps the level.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "../core/clock.js";
import { isRateLimitError, type RateLimitError } from "../core/errors.js";
import type { GovernorOptions } from "../core/options.js";
import { Governor } from "./governor.js";
import { flush } from "./test-helpers.js";

const options = (clock: ManualClock): GovernorOptions => ({
  clock,
  keys: {
    a: { maxInflight: 100, tpm: 6000 },
    b: { maxInflight: 100 },
    t1: { maxInflight: 100, tenant: "team" },
    t2: { maxInflight: 100, tenant: "team" },
  },
  tenants: { team: { tpm: 3000 } },
  lanes: {
    m: { limit: 1, queueTimeoutMs: 60_000, pods: [{ id: "http://p:1", maxInflight: 1 }], adaptive: false },
    n: { limit: 4, queueTimeoutMs: 60_000 },
  },
});

const keyTokens = (gov: Governor, key: string) => gov.snapshot().keys.find((k) => k.key === key)!.tokens!;

describe("Governor: per-key token budgets", () => {
  test("reserved at the grant, reconciled with usage; past it refused at once naming the bucket and its refill", async () => {
    const clock = new ManualClock();
    const gov = new Governor(options(clock));
    const l = await gov.acquire("n", { key: "a", tokens: 4000 });
    assert.equal(keyTokens(gov, "a").available, 2000);
    l.succeeded({ tokens: 1000 });
    assert.equal(keyTokens(gov, "a").available, 5000, "refunded down to the real usage");
    const error = (await gov.acquire("n", { key: "a", tokens: 5500 }).catch((e) => e)) as RateLimitError;
    assert.ok(isRateLimitError(error));
    assert.equal(error.budget, "key:a");
    assert.equal(error.reason, "no_wait");
    assert.equal(error.retryAfterMs, 5000, "500 tokens short at 100 a second");
    assert.match(error.message, /^key:a's tokens budget \(6000 tokens\/min, 5000 available\)/);
    clock.advance(5000);
    (await gov.acquire("n", { key: "a", tokens: 5500 })).release();
  });

  test("a key at its budget never holds the lane: its waiter is refused, the next key's is granted", async () => {
    const clock = new ManualClock();
    const gov = new Governor(options(clock));
    const holder = await gov.acquire("m", { key: "b" }); // the lane's one slot
    const aWaits = gov.acquire("m", { key: "a", tokens: 3000 }).catch((e) => e);
    const bWaits = gov.acquire("m", { key: "b" });
    // a's estimate was covered at arrival; then a's usage elsewhere drives its bucket into debt.
    const elsewhere = await gov.acquire("n", { key: "a", tokens: 3000 });
    elsewhere.succeeded({ tokens: 9000 });
    assert.equal(keyTokens(gov, "a").available, -3000);
    holder.release();
    await flush();
    const refused = (await aWaits) as RateLimitError;
    assert.ok(isRateLimitError(refused), "a's waiter leaves with its key's refusal");
    assert.equal(refused.budget, "key:a");
    assert.equal(refused.retryAfterMs, 60_000, "6000 short at 100 a second");
    const b = await bWaits; // granted at the release: not held behind a's bucket
    b.release();
  });

  test("a tenant's keys share one bucket", async () => {
    const clock = new ManualClock();
    const gov = new Governor(options(clock));
    (await gov.acquire("n", { key: "t1", tokens: 2000 })).release();
    const error = (await gov.acquire("n", { key: "t2", tokens: 2000 }).catch((e) => e)) as RateLimitError;
    assert.ok(isRateLimitError(error));
    assert.equal(error.budget, "tenant:team");
    const tenant = gov.snapshot().tenants!.find((t) => t.tenant === "team")!;
    assert.deepEqual([tenant.keys, tenant.tokens!.available], [["t1", "t2"], 1000]);
    assert.equal(
      gov.snapshot().keys.find((k) => k.key === "t1")!.tokens,
      undefined,
      "t1 has no budget of its own",
    );
  });

  test("a key's rpm counts one per call, whatever its estimate; refused past it naming the requests bucket", async () => {
    const clock = new ManualClock();
    const gov = new Governor({
      clock,
      keys: { r: { maxInflight: 100, rpm: 2 } },
      lanes: { n: { limit: 4 } },
    });
    for (let i = 0; i < 2; i++) (await gov.acquire("n", { key: "r", tokens: 50_000 })).release();
    const error = (await gov.acquire("n", { key: "r" }).catch((e) => e)) as RateLimitError;
    assert.ok(isRateLimitError(error));
    assert.deepEqual([error.budget, error.unit, error.needed], ["key:r", "requests", 1]);
    assert.equal(error.retryAfterMs, 30_000, "one request at 2 a minute");
    clock.advance(30_000);
    (await gov.acquire("n", { key: "r" })).release();
  });

  test("a provider's 429 with a reset pauses the pod, never the key's budget", async () => {
    const clock = new ManualClock();
    const gov = new Governor(options(clock));
    const l = await gov.acquire("m", { key: "a", tokens: 1000 });
    l.failed({ status: 429, headers: { "retry-after": "30" } });
    assert.equal(gov.snapshot().pods[0]!.quota_paused_s, 30);
    // The same key on another lane is granted at once: its budget is not paused.
    (await gov.acquire("n", { key: "a", tokens: 1000 })).release();
    assert.deepEqual(
      gov.rateLimits("n", "interactive", "a").map((r) => [r.scope, r.name, r.perMinute]),
      [["key", "a", 6000]],
    );
  });

  test("a reload keeps the key's level (capped at a lower rate) and gives a new budget a full bucket", async () => {
    const clock = new ManualClock();
    const gov = new Governor(options(clock));
    (await gov.acquire("n", { key: "a", tokens: 4000 })).release();
    assert.equal(keyTokens(gov, "a").available, 2000);
    const next = options(clock);
    next.keys!.a = { maxInflight: 100, tpm: 1500 };
    next.keys!.b = { maxInflight: 100, tpm: 900 };
    gov.reconfigure(next);
    assert.deepEqual([keyTokens(gov, "a").available, keyTokens(gov, "a").per_minute], [1500, 1500]);
    assert.equal(keyTokens(gov, "b").available, 900);
  });
});
