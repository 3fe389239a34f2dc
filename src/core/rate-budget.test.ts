import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MinuteCounter } from "./minute-counter.js";
import { BULK, DEFAULT_RANK, INTERACTIVE } from "./priority.js";
import { RateBudget, type RateState } from "./rate-budget.js";

const MIN = 60_000;

describe("RateBudget: a token bucket of one minute's worth", () => {
  test("starts full, reserves at the grant and refills continuously, never above capacity", () => {
    const b = new RateBudget("chat", "tokens", 6000, 0);
    assert.equal(b.levelAt(0), 6000);
    assert.ok(b.hasRoom(1, 6000, 0));
    b.take(4000, 0);
    assert.equal(b.levelAt(0), 2000);
    assert.equal(b.levelAt(10_000), 3000, "6000 per minute is 100 per second");
    assert.equal(b.levelAt(10 * MIN), 6000, "capped at capacity");
  });

  test("a call waits for exactly the refill its estimate needs: hasRoom turns true at nextChangeAt, not a ms before", () => {
    const b = new RateBudget("chat", "tokens", 7000, 0);
    b.take(7000, 0);
    const at = b.nextChangeAt(0, 3333)!;
    assert.equal(at, Math.ceil((3333 * MIN) / 7000));
    assert.equal(b.hasRoom(1, 3333, at - 1), false);
    assert.equal(b.hasRoom(1, 3333, at), true);
    assert.equal(b.nextChangeAt(at, 3333), undefined, "no change to wait for once it fits");
  });

  test("an estimate above the capacity never fits and has no wake-up", () => {
    const b = new RateBudget("chat", "tokens", 1000, 0);
    assert.equal(b.hasRoom(1, 1001, 10 * MIN), false);
    assert.equal(b.nextChangeAt(0, 1001), undefined);
  });

  test("a request bucket counts one per call whatever the estimate", () => {
    const b = new RateBudget("chat", "requests", 2, 0);
    b.take(50_000, 0);
    b.take(0, 0);
    assert.equal(b.levelAt(0), 0);
    assert.equal(b.hasRoom(1, 1, 0), false);
    assert.equal(b.nextChangeAt(0, 99), 30_000, "2 per minute: one every 30 s");
  });

  test("reconcile refunds an over-estimate and charges an under-estimate; debt is carried until the refill pays it", () => {
    const b = new RateBudget("chat", "tokens", 6000, 0);
    b.take(3000, 0);
    b.reconcile(3000, 1000, 0, 0);
    assert.equal(b.levelAt(0), 5000, "2000 unused tokens refunded");
    b.take(5000, 0);
    b.reconcile(5000, 8000, 0, 0);
    assert.equal(b.levelAt(0), -3000, "3000 used beyond the estimate: debt");
    assert.equal(b.hasRoom(1, 0, 0), false, "in debt even a call without an estimate waits");
    assert.equal(b.nextChangeAt(0, 0), 30_000, "until the refill has paid the debt");
    assert.equal(b.hasRoom(1, 0, 30_000), true);
  });

  test("a call that never reached the provider is refunded in full, a request too", () => {
    const tokens = new RateBudget("chat", "tokens", 6000, 0);
    const requests = new RateBudget("chat", "requests", 10, 0);
    tokens.take(2500, 0);
    requests.take(2500, 0);
    tokens.reconcile(2500, null, 0, 0);
    requests.reconcile(2500, null, 0, 0);
    assert.equal(tokens.levelAt(0), 6000);
    assert.equal(requests.levelAt(0), 10);
  });

  test("a request that ran keeps its one request whatever its tokens", () => {
    const requests = new RateBudget("chat", "requests", 10, 0);
    requests.take(100, 0);
    requests.reconcile(100, 5, 0, 0);
    assert.equal(requests.levelAt(0), 9);
  });

  test("a refund never returns what the refill already paid back: a reservation held a minute is refunded nothing", () => {
    const b = new RateBudget("chat", "tokens", 6000, 0);
    b.take(6000, 0);
    // After a minute the bucket is full again: the reservation's tokens came back by refill.
    b.take(6000, MIN);
    b.reconcile(6000, 0, MIN, 0);
    assert.equal(b.levelAt(MIN), 0, "refunding now would let this minute spend 12000");
    // Held half a minute: half of it has been paid back, the other half is refunded.
    const c = new RateBudget("c", "tokens", 6000, 0);
    c.take(6000, 0);
    c.take(3000, MIN / 2);
    c.reconcile(6000, 0, MIN / 2, 0);
    assert.equal(c.levelAt(MIN / 2), 3000);
  });

  test("on a busy bucket a refund returns the whole over-estimate, however long the call was held (the drawn bound)", () => {
    const b = new RateBudget("chat", "tokens", 60_000, 0);
    b.take(50_000, 0);
    b.take(10_000, 5_000);
    // Held 10 s: the refill has paid back 10 000 tokens, more than the 4 000 unused — the refill
    // bound alone refunds nothing. Nothing else was drawn since: a bucket full after the grant
    // would hold 60 000 − 10 000 + the refill, so all 4 000 come back.
    const level = b.levelAt(15_000);
    b.reconcile(10_000, 6_000, 15_000, 5_000);
    assert.equal(b.levelAt(15_000), level + 4_000);
  });

  test("a refund never lifts the level above capacity", () => {
    const b = new RateBudget("chat", "tokens", 6000, 0);
    b.take(1000, 0);
    b.reconcile(1000, 0, 1000, 0);
    assert.equal(b.levelAt(1000), 6000);
  });

  test("its state is plain JSON and a bucket read back answers the same", () => {
    const b = new RateBudget("chat", "tokens", 6000, 0, 500);
    b.take(5000, 1000);
    const state = JSON.parse(JSON.stringify(b.toJSON())) as RateState;
    assert.deepEqual(state, {
      name: "chat",
      unit: "tokens",
      limit: 6000,
      inflight: 0,
      perMinute: 6000,
      level: 1000,
      updatedAt: 1000,
      reserve: 500,
    });
    const c = RateBudget.fromJSON(state);
    for (const t of [1000, 20_000, 70_000])
      for (const rank of [INTERACTIVE, BULK])
        assert.deepEqual(
          [c.levelAt(t), c.nextChangeAt(t, 4000, rank)],
          [b.levelAt(t), b.nextChangeAt(t, 4000, rank)],
        );
  });

  test("a reload keeps the level and the debt, capped at a lower capacity", () => {
    const b = new RateBudget("chat", "tokens", 6000, 0);
    b.take(1000, 0);
    b.reconfigure(3000, 0);
    assert.equal(b.levelAt(0), 3000);
    b.take(3000, 0);
    b.reconcile(3000, 4000, 0, 0);
    b.reconfigure(12_000, 0);
    assert.equal(b.levelAt(0), -1000, "debt is never forgiven");
  });

  test("the interactive reserve: other classes leave it in the bucket, an interactive call may take it", () => {
    const b = new RateBudget("chat", "tokens", 6000, 0, 1000);
    assert.equal(b.hasRoom(BULK, 5000, 0), true, "5000 taken leaves the 1000 kept");
    assert.equal(b.hasRoom(BULK, 5001, 0), false);
    assert.equal(b.hasRoom(DEFAULT_RANK, 5001, 0), false, "any class but interactive");
    assert.equal(b.hasRoom(INTERACTIVE, 6000, 0), true, "an interactive call may use the whole bucket");
    b.take(5000, 0);
    assert.equal(b.hasRoom(BULK, 1, 0), false, "at the reserve: nothing more for bulk");
    assert.equal(b.hasRoom(INTERACTIVE, 1000, 0), true);
    // 100 tokens/s: bulk waits until the level is its 400 plus the 1000 kept, 4 s from now.
    assert.equal(b.nextChangeAt(0, 400, BULK), 4000);
    assert.equal(b.nextChangeAt(0, 400, INTERACTIVE), undefined, "fits now");
    assert.equal(b.hasRoom(BULK, 400, 3999), false);
    assert.equal(b.hasRoom(BULK, 400, 4000), true);
    assert.equal(b.nextChangeAt(0, 5001, BULK), undefined, "5001 + 1000 kept exceeds 6000: never for bulk");
  });

  test("a request bucket's reserve counts requests", () => {
    const b = new RateBudget("chat", "requests", 10, 0, 2);
    for (let i = 0; i < 8; i++) b.take(0, 0);
    assert.deepEqual([b.hasRoom(BULK, 0, 0), b.hasRoom(INTERACTIVE, 0, 0)], [false, true]);
    assert.equal(b.nextChangeAt(0, 0, BULK), 6000, "10 per minute: the 9th request's turn in 6 s");
  });

  test("a reload may change the reserve; without one it keeps it", () => {
    const b = new RateBudget("chat", "tokens", 6000, 0, 1000);
    b.reconfigure(3000, 0);
    assert.equal(b.reserve, 1000);
    b.reconfigure(3000, 0, 0);
    assert.equal(b.hasRoom(BULK, 3000, 0), true);
  });

  test("used_1m: what was charged over the last minute, net of refunds", () => {
    const b = new RateBudget("chat", "tokens", 6000, 0);
    b.take(3000, 0);
    b.reconcile(3000, 1000, 500, 0);
    assert.equal(b.used.total(500), 1000);
    assert.equal(b.used.total(MIN + 1000), 0, "a minute later it has left the window");
  });
});

describe("MinuteCounter", () => {
  test("sums the last 60 seconds in one-second slots and forgets older ones", () => {
    const c = new MinuteCounter();
    c.add(1, 0);
    c.add(2, 30_500);
    c.add(3, 59_999);
    assert.equal(c.total(59_999), 6);
    assert.equal(c.total(60_000), 5, "the slot of second 0 is a minute old");
    assert.equal(c.total(200_000), 0);
    c.add(4, 200_000);
    assert.equal(c.total(200_000), 4, "a reused slot starts from zero");
  });
});
