/**
 * Provider accounts through the Governor (issue 10, seed 004): one meter across several lanes —
 * shared buckets served in priority order, a quota signal pausing the whole account, and an
 * in-flight cap cut on throttling and grown back on success.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "../core/clock.js";
import { isQuotaPausedError, type QuotaPausedError } from "../core/errors.js";
import type { Lease } from "../core/lease.js";
import type { GovernorOptions } from "../core/options.js";
import { Governor } from "./governor.js";
import { flush } from "./test-helpers.js";

function twoModels(
  account: NonNullable<GovernorOptions["accounts"]>[string],
  extra: Partial<GovernorOptions> = {},
) {
  const clock = new ManualClock();
  const gov = new Governor({
    clock,
    random: () => 0.5,
    accounts: { prod: account },
    lanes: {
      A: { account: "prod", queueTimeoutMs: 120_000, pods: [{ id: "pa", maxInflight: 20 }], reserve: 0 },
      B: { account: "prod", queueTimeoutMs: 120_000, pods: [{ id: "pb", maxInflight: 20 }], reserve: 0 },
    },
    ...extra,
  });
  const acct = () => gov.snapshot().accounts.find((a) => a.account === "prod")!;
  return { clock, gov, acct };
}

describe("Governor: accounts", () => {
  test("the account's buckets are shared by its lanes and its snapshot shows them", async () => {
    const { gov, acct } = twoModels({ tpm: 6000, rpm: 100, maxInflight: 8 });
    const a = await gov.acquire("A", { tokens: 2000 });
    const b = await gov.acquire("B", { tokens: 3000 });
    assert.deepEqual(acct(), {
      account: "prod",
      lanes: ["A", "B"],
      inflight: 2,
      max_inflight: 8,
      adaptive_cap: 8,
      tokens: { per_minute: 6000, available: 1000, used_1m: 5000, reserve: 0 },
      requests: { per_minute: 100, available: 98, used_1m: 2, reserve: 0 },
      throttled_1m: 0,
      throttled_per_inflight: 0,
      quota_paused_s: 0,
    });
    a.succeeded({ tokens: 500 });
    b.release();
    assert.equal(acct().tokens!.available, 2500);
    assert.equal(acct().inflight, 0);
  });

  test("a large waiter of one model keeps the account's refill: small calls of another model do not pass it", async () => {
    const { gov, clock, acct } = twoModels({ tpm: 6000 });
    (await gov.acquire("A", { tokens: 6000 })).release();
    const order: string[] = [];
    const big = gov.acquire("A", { tokens: 3000 }).then((l) => {
      order.push("big");
      return l;
    });
    await flush();
    clock.advance(1000);
    // B is empty and the bucket holds 100: without the hold this would be granted on arrival.
    assert.equal(gov.tryAcquire("B", { tokens: 50 }), undefined);
    const small = gov.acquire("B", { tokens: 50 }).then((l) => {
      order.push("small");
      return l;
    });
    await flush();
    assert.deepEqual(order, []);
    clock.advance(29_000);
    await flush();
    assert.deepEqual(order, ["big"]);
    clock.advance(500);
    await flush();
    assert.deepEqual(order, ["big", "small"]);
    for (const p of [big, small]) (await p).release();
    assert.equal(acct().inflight, 0);
  });

  test("a 429 with a reset on one model pauses the whole account: the other model is refused at once, and both resume at the reset", async () => {
    const { gov, clock, acct } = twoModels({ maxInflight: 8, maxQuotaPauseMs: 60_000 });
    const a = await gov.acquire("A");
    a.failed({ status: 429, headers: { "retry-after": "5" } });
    assert.equal(acct().quota_paused_s, 5);
    assert.equal(acct().throttled_1m, 1);
    const error = (await gov.acquire("B").catch((e) => e)) as QuotaPausedError;
    assert.ok(isQuotaPausedError(error));
    assert.equal(error.account, "prod");
    assert.equal(error.retryAfterMs, 5000);
    assert.match(error.message, /account prod of lane B/);
    assert.equal(gov.check("A") instanceof Error, true, "the pre-body check says the same");
    assert.equal(gov.tryAcquire("B"), undefined);
    const pods = gov.snapshot().pods;
    assert.deepEqual(
      pods.map((p) => p.quota_paused_s),
      [0, 0],
      "the account is paused, not the pod that answered",
    );
    assert.equal(gov.snapshot().lanes.find((l) => l.lane === "B")!.paused_s, 5);
    clock.advance(5000);
    const b = await gov.acquire("B");
    assert.equal(b.lane, "B");
    b.succeeded();
  });

  test("the pause is capped at maxQuotaPauseMs", async () => {
    const { gov, acct } = twoModels({ maxInflight: 8, maxQuotaPauseMs: 2000 });
    (await gov.acquire("A")).failed({ status: 429, headers: { "retry-after": "99999999" } });
    assert.equal(acct().quota_paused_s, 2);
  });

  test("a re-dispatch after a quota signal is denied: every pod of the account would answer the same", async () => {
    const clock = new ManualClock();
    const gov = new Governor({
      clock,
      accounts: { prod: { maxInflight: 8 } },
      lanes: {
        A: {
          account: "prod",
          pods: [
            { id: "p1", maxInflight: 4 },
            { id: "p2", maxInflight: 4 },
          ],
        },
      },
    });
    const lease = await gov.acquire("A");
    assert.equal(await lease.retry({ status: 429, headers: { "retry-after-ms": "1500" } }), false);
    assert.equal(gov.snapshot().accounts[0]!.inflight, 0);
    assert.equal(gov.snapshot().accounts[0]!.quota_paused_s, 1.5);
  });

  test("the account's cap is cut on throttling and grown back on success", async () => {
    const { gov, acct } = twoModels({ maxInflight: 8, adaptive: { floor: 2 } });
    const held: Lease[] = [];
    for (let i = 0; i < 8; i++) held.push(await gov.acquire(i % 2 === 0 ? "A" : "B"));
    assert.equal(gov.tryAcquire("A"), undefined, "the account is full at 8 in flight");
    held.pop()!.failed({ status: 429 }); // throttled without a reset: congestion
    assert.equal(acct().adaptive_cap, 4, "halved from the 8 in flight at the refusal");
    assert.equal(acct().throttled_1m, 1);
    assert.equal(acct().throttled_per_inflight, Math.round((1 / 7) * 1000) / 1000);
    // Drain to the new cap, then run at it: +1 per cap's worth of successes while it is full.
    while (held.length > 0) held.pop()!.succeeded();
    let cap = acct().adaptive_cap!;
    for (let round = 0; round < 40 && cap < 8; round++) {
      const batch: Lease[] = [];
      for (let i = 0; i < cap; i++) batch.push(await gov.acquire(i % 2 === 0 ? "A" : "B"));
      assert.equal(gov.tryAcquire("B"), undefined, `held at its cap ${cap}`);
      for (const l of batch) l.succeeded();
      cap = acct().adaptive_cap!;
    }
    assert.equal(cap, 8, "grown back to max_inflight");
  });

  test("adaptive: false keeps the cap at maxInflight", async () => {
    const { gov, acct } = twoModels({ maxInflight: 4, adaptive: false });
    const leases = [await gov.acquire("A"), await gov.acquire("B")];
    leases[0]!.failed({ status: 429 });
    leases[1]!.succeeded();
    assert.equal(acct().adaptive_cap, 4);
  });

  test("a reload keeps the account's bucket level and pause, and applies the new limits", async () => {
    const { gov, clock, acct } = twoModels({ tpm: 6000, maxInflight: 8 });
    (await gov.acquire("A", { tokens: 5000 })).release();
    (await gov.acquire("A")).failed({ status: 429, headers: { "retry-after": "3" } });
    gov.reconfigure({
      clock,
      random: () => 0.5,
      accounts: { prod: { tpm: 3000, maxInflight: 2 } },
      lanes: {
        A: { account: "prod", pods: [{ id: "pa", maxInflight: 20 }] },
        B: { account: "prod", pods: [{ id: "pb", maxInflight: 20 }] },
      },
    });
    assert.equal(acct().tokens!.per_minute, 3000);
    assert.equal(acct().tokens!.available, 1000, "the level is kept");
    assert.equal(acct().max_inflight, 2);
    assert.equal(acct().quota_paused_s, 3);
  });
});
