/**
 * Token and request budgets through the Governor (issue 10), on a ManualClock: reserve at the
 * grant, reconcile at the end, refuse at once what can never fit or not in time, wait for the
 * refill in priority order, and never charge a call that never reached the provider. The buckets
 * here keep no interactive reserve (`tpmReserve: 0`): these tests are about the bucket itself;
 * the reserve has its own tests (rate-reserve.test.ts).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "../core/clock.js";
import { isQueueTimeoutError, isRateLimitError, type RateLimitError } from "../core/errors.js";
import { Governor } from "./governor.js";
import { flush, make, track } from "./test-helpers.js";

const MIN = 60_000;
const tokens = (gov: Governor, lane = "L") => gov.snapshot().lanes.find((l) => l.lane === lane)!.tokens!;

describe("Governor: token budgets (tpm)", () => {
  test("reserves the estimate at the grant; succeeded(usage) refunds the unused part at once", async () => {
    const { gov } = make({ limit: 10, tpm: 6000, tpmReserve: 0 });
    const lease = await gov.acquire("L", { tokens: 4000 });
    assert.equal(tokens(gov).available, 2000);
    lease.succeeded({ promptTokens: 700, completionTokens: 300 });
    assert.equal(tokens(gov).available, 5000);
    assert.equal(tokens(gov).used_1m, 1000);
  });

  test("usage beyond the estimate is charged: the debt holds the next call until the refill pays it", async () => {
    const { gov, clock } = make({ limit: 10, tpm: 6000, tpmReserve: 0, queueTimeoutMs: 120_000 });
    const a = await gov.acquire("L", { tokens: 6000 });
    a.succeeded({ tokens: 9000 });
    assert.equal(tokens(gov).available, -3000);
    const order: string[] = [];
    const next = track(gov, order, "next", { tokens: 0 });
    await flush();
    assert.deepEqual(order, [], "in debt: even a call with no estimate waits");
    clock.advance(30_000 - 1);
    await flush();
    assert.deepEqual(order, []);
    clock.advance(1);
    await flush();
    assert.deepEqual(order, ["next"], "granted by the timer at the moment the debt is paid");
    (await next).release();
  });

  test("a waiter is granted by the timer exactly when the refill covers its estimate", async () => {
    const { gov, clock } = make({ limit: 10, tpm: 6000, tpmReserve: 0 });
    (await gov.acquire("L", { tokens: 6000 })).release();
    const order: string[] = [];
    const b = track(gov, order, "b", { tokens: 1500 });
    await flush();
    clock.advance(15_000 - 1);
    await flush();
    assert.deepEqual(order, []);
    clock.advance(1);
    await flush();
    assert.deepEqual(order, ["b"]);
    (await b).release();
    assert.equal(clock.pendingTimers, 0, "no timer left once nothing waits");
  });

  test("an estimate above the bucket's capacity is refused at once, with the numbers", async () => {
    const { gov } = make({ limit: 10, tpm: 6000, tpmReserve: 0 });
    const error = (await gov.acquire("L", { tokens: 6001 }).catch((e) => e)) as RateLimitError;
    assert.ok(isRateLimitError(error));
    assert.equal(error.reason, "exceeds_capacity");
    assert.deepEqual([error.needed, error.perMinute, error.available], [6001, 6000, 6000]);
    assert.match(error.message, /6001 tokens/);
    assert.equal(gov.snapshot().lanes[0]!.queued, 0);
  });

  test("one the refill cannot cover within the queue timeout is refused at once, Retry-After = the refill time", async () => {
    const { gov } = make({ limit: 10, tpm: 6000, tpmReserve: 0, queueTimeoutMs: 10_000 });
    (await gov.acquire("L", { tokens: 5000 })).release(); // 1000 left: 100 per second
    const error = (await gov.acquire("L", { tokens: 3000 }).catch((e) => e)) as RateLimitError;
    assert.equal(error.reason, "cannot_cover_in_time");
    assert.equal(error.retryAfterMs, 20_000);
    // One that the refill covers within the timeout waits instead.
    const ok = gov.acquire("L", { tokens: 1900 });
    await flush();
    assert.equal(gov.snapshot().lanes[0]!.queued, 1);
    gov.close();
    void ok.catch(() => {});
  });

  test("the waiters queued ahead count: a call the refill covers alone but not after them is refused at once", async () => {
    const { gov } = make({ limit: 10, tpm: 6000, tpmReserve: 0, queueTimeoutMs: 10_000 });
    (await gov.acquire("L", { tokens: 6000 })).release(); // empty: 100 tokens a second
    const first = gov.acquire("L", { tokens: 600 }); // covered in 6 s: waits
    await flush();
    assert.equal(gov.snapshot().lanes[0]!.queued, 1);
    // Alone 400 tokens are covered in 4 s; behind the 600 queued ahead, only in 10 s: the timeout.
    const second = (await gov.acquire("L", { tokens: 400 }).catch((e) => e)) as RateLimitError;
    assert.ok(isRateLimitError(second), String(second));
    assert.deepEqual([second.reason, second.retryAfterMs], ["cannot_cover_in_time", 10_000]);
    assert.equal(gov.check("L", { tokens: 300 }), undefined, "behind 600: 9 s, within the timeout");
    // An interactive call queues ahead of bulk waiters: only better or equal classes count.
    const bulk = gov.acquire("L", { tokens: 300, priority: "bulk" });
    await flush();
    assert.equal(
      gov.check("L", { tokens: 300, priority: "interactive" }),
      undefined,
      "nothing interactive ahead",
    );
    assert.equal(
      (gov.check("L", { tokens: 200, priority: "bulk" }) as RateLimitError).reason,
      "cannot_cover_in_time",
      "behind 600 + 300: 11 s",
    );
    gov.close();
    for (const p of [first, bulk]) void p.catch(() => {});
  });

  test("check() before the body says the same, and wait: false refuses for lack of tokens now (no_wait)", async () => {
    const { gov } = make({ limit: 10, tpm: 6000, tpmReserve: 0, queueTimeoutMs: 10_000 });
    (await gov.acquire("L", { tokens: 6000 })).release();
    assert.equal((gov.check("L", { tokens: 7000 }) as RateLimitError).reason, "exceeds_capacity");
    assert.equal((gov.check("L", { tokens: 5000 }) as RateLimitError).reason, "cannot_cover_in_time");
    assert.equal(gov.check("L", { tokens: 500 }), undefined, "covered in 5 s: it may wait");
    const error = (await gov.acquire("L", { tokens: 500, wait: false }).catch((e) => e)) as RateLimitError;
    assert.equal(error.reason, "no_wait");
    assert.equal(error.retryAfterMs, 5000);
    assert.equal(gov.tryAcquire("L", { tokens: 500 }), undefined);
  });

  test("waiters on a bucket are served in priority order: a small bulk call does not pass a large interactive one", async () => {
    const { gov, clock } = make({ limit: 10, tpm: 6000, tpmReserve: 0, queueTimeoutMs: 120_000 });
    (await gov.acquire("L", { tokens: 6000 })).release();
    const order: string[] = [];
    const big = track(gov, order, "big", { tokens: 3000, priority: "interactive" });
    const small = track(gov, order, "small", { tokens: 100, priority: "bulk" });
    clock.advance(29_999);
    await flush();
    assert.deepEqual(order, [], "the bulk call fits since 1 s but waits behind the interactive one");
    clock.advance(1);
    await flush();
    assert.deepEqual(order, ["big"]);
    clock.advance(1000);
    await flush();
    assert.deepEqual(order, ["big", "small"]);
    for (const p of [big, small]) (await p).release();
  });

  test("aging counts: a bulk waiter that ages past a large default one is granted at that aging step", async () => {
    const { gov, clock } = make({
      limit: 10,
      tpm: 6000,
      tpmReserve: 0,
      queueTimeoutMs: 300_000,
      agingMs: 10_000,
    });
    (await gov.acquire("L", { tokens: 6000 })).succeeded({ tokens: 6600 }); // 600 in debt
    const order: string[] = [];
    const small = track(gov, order, "small", { tokens: 100, priority: "bulk" }); // covered at 7 s
    clock.advance(1000);
    const big = track(gov, order, "big", { tokens: 6000 }); // the better class: served first
    clock.advance(9000 - 1);
    await flush();
    assert.deepEqual(order, [], "at 7 s the bulk call fits, but the default one is ahead of it");
    // At 10 s the bulk call (arrived at 0) ages to default and, arrived first, is the best waiter.
    // Nothing else changes then: only a wake-up at the aging step grants it now, not at 66 s.
    clock.advance(1);
    await flush();
    assert.deepEqual(order, ["small"]);
    (await small).release();
    gov.close();
    void big.catch(() => {});
  });

  test("a call aborted while queued is never charged, and its leaving lets a smaller one behind it through", async () => {
    const { gov } = make({ limit: 10, tpm: 6000, tpmReserve: 0, queueTimeoutMs: 120_000 });
    (await gov.acquire("L", { tokens: 5000 })).release();
    const ac = new AbortController();
    const order: string[] = [];
    const big = track(gov, order, "big", { tokens: 3000, signal: ac.signal });
    const small = track(gov, order, "small", { tokens: 800 });
    await flush();
    assert.deepEqual(order, [], "the small one waits behind the big one though it fits");
    ac.abort(new Error("gone"));
    await assert.rejects(big, /gone/);
    await flush();
    assert.deepEqual(order, ["small"]);
    assert.equal(tokens(gov).available, 200);
    (await small).release();
  });

  test("release({ sent: false }) and failed({ refused: true }) refund; release() and failed(503) keep the estimate", async () => {
    const { gov } = make({ limit: 10, tpm: 60_000, tpmReserve: 0 });
    (await gov.acquire("L", { tokens: 1000 })).release({ sent: false });
    (await gov.acquire("L", { tokens: 1000 })).failed({ refused: true });
    assert.equal(tokens(gov).available, 60_000);
    (await gov.acquire("L", { tokens: 1000 })).release();
    (await gov.acquire("L", { tokens: 1000 })).failed({ status: 503 });
    (await gov.acquire("L", { tokens: 1000 })).succeeded();
    assert.equal(tokens(gov).available, 57_000);
  });

  test("ending a lease twice reconciles once", async () => {
    const { gov } = make({ limit: 10, tpm: 6000, tpmReserve: 0 });
    const lease = await gov.acquire("L", { tokens: 3000 });
    lease.succeeded({ tokens: 1000 });
    lease.succeeded({ tokens: 0 });
    lease.release({ sent: false });
    assert.equal(tokens(gov).available, 5000);
  });

  test("a waiter past its queue timeout times out, uncharged", async () => {
    const { gov, clock } = make({ limit: 10, tpm: 6000, tpmReserve: 0, queueTimeoutMs: 10_000 });
    (await gov.acquire("L", { tokens: 6000 })).release();
    // Each covered in 9 s when it arrives, so both may wait (the interactive call queues ahead
    // of the bulk one, which counts nothing ahead of it); the bulk call is then covered at 18 s.
    const q = gov.acquire("L", { tokens: 900, priority: "bulk" });
    const p = gov.acquire("L", { tokens: 900, priority: "interactive" });
    await flush();
    assert.equal(gov.snapshot().lanes[0]!.queued, 2);
    clock.advance(9000);
    (await p).release();
    clock.advance(1000);
    assert.ok(isQueueTimeoutError(await q.catch((e) => e)));
    assert.equal(gov.snapshot().lanes[0]!.queued, 0);
    assert.equal(tokens(gov).available, 100);
  });

  test("tokens must be a number ≥ 0", async () => {
    const { gov } = make({ limit: 1, tpm: 6000, tpmReserve: 0 });
    await assert.rejects(gov.acquire("L", { tokens: -1 }), /tokens must be a number ≥ 0/);
    assert.throws(() => gov.tryAcquire("L", { tokens: Number.NaN }), /tokens must be a number/);
  });
});

describe("Governor: request budgets (rpm)", () => {
  test("one request per call whatever the estimate; a call never sent gives its request back", async () => {
    const clock = new ManualClock();
    const gov = new Governor({
      clock,
      lanes: { L: { limit: 10, rpm: 2, rpmReserve: 0, queueTimeoutMs: 60_000 } },
    });
    const a = await gov.acquire("L", { tokens: 50_000 });
    const b = await gov.acquire("L");
    const requests = () => gov.snapshot().lanes[0]!.requests!;
    assert.equal(requests().available, 0);
    a.release({ sent: false });
    assert.equal(requests().available, 1);
    b.succeeded({ tokens: 1 });
    const order: string[] = [];
    (await track(gov, order, "c")).release();
    const d = track(gov, order, "d");
    clock.advance(29_999);
    await flush();
    assert.deepEqual(order, ["c"]);
    clock.advance(1);
    await flush();
    assert.deepEqual(order, ["c", "d"]);
    (await d).release();
    // With the default 30 s timeout a call the refill covers only at the timeout itself is refused.
    const short = new Governor({ clock, lanes: { L: { limit: 10, rpm: 2, rpmReserve: 0 } } });
    await short.acquire("L");
    await short.acquire("L");
    const error = (await short.acquire("L").catch((e) => e)) as RateLimitError;
    assert.deepEqual([error.reason, error.retryAfterMs], ["cannot_cover_in_time", MIN / 2]);
  });
});

describe("Governor: rate options", () => {
  test("tpm, rpm and account are validated, naming the option", () => {
    assert.throws(
      () => new Governor({ lanes: { L: { limit: 1, tpm: 0 } } }),
      /lanes\.L\.tpm: expected a whole number ≥ 1/,
    );
    assert.throws(() => new Governor({ lanes: { L: { limit: 1, rpm: 1.5 } } }), /lanes\.L\.rpm/);
    assert.throws(
      () => new Governor({ lanes: { L: { limit: 1, account: "nope" } } }),
      /lanes\.L\.account: expected one of the accounts \(none configured\)/,
    );
    assert.throws(
      () => new Governor({ accounts: { a: {} } }),
      /accounts\.a: expected at least one of maxInflight, tpm, rpm/,
    );
    assert.throws(
      () => new Governor({ accounts: { a: { tpm: 10, adaptive: { floor: 2 } } } }),
      /accounts\.a\.adaptive: expected false without maxInflight/,
    );
  });
});
