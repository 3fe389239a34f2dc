/**
 * The interactive reserve of token and request buckets through the Governor (issue 10, DESIGN
 * §1.1): a lane that keeps slots for interactive callers keeps the same share of its `tpm` / `rpm`
 * (or `tpmReserve` / `rpmReserve`), so a flood of bulk calls that drains a bucket leaves the next
 * interactive call its share at once; aging does not unlock it; Retry-After and the
 * can't-cover-in-time rule count it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "../core/clock.js";
import { isRateLimitError, type RateLimitError } from "../core/errors.js";
import type { Lease } from "../core/lease.js";
import { Governor } from "./governor.js";
import { flush, make, track } from "./test-helpers.js";

const tokens = (gov: Governor, lane = "L") => gov.snapshot().lanes.find((l) => l.lane === lane)!.tokens!;

async function refusal(p: Promise<unknown>): Promise<RateLimitError> {
  const error = await p.then(
    () => assert.fail("expected a refusal"),
    (e: unknown) => e,
  );
  assert.ok(isRateLimitError(error), String(error));
  return error;
}

/** `name` (tracked into `order`) is granted exactly `ms` from now: not 1 ms before, and at `ms`. */
async function grantedExactlyIn(
  clock: ManualClock,
  order: string[],
  ms: number,
  name: string,
): Promise<void> {
  clock.advance(ms - 1);
  await flush();
  assert.deepEqual(order, [], `${name} not granted 1 ms before ${ms} ms`);
  clock.advance(1);
  await flush();
  assert.deepEqual(order, [name]);
}

/** Half of a 60 000 tpm kept for interactive calls; a waiter ages one class a second. */
const HALF_KEPT_AGING = {
  limit: 100,
  reserve: 1,
  tpm: 60_000,
  tpmReserve: 30_000,
  agingMs: 1000,
  queueTimeoutMs: 600_000,
};

describe("Governor: the interactive reserve of token and request buckets", () => {
  test("by default a lane keeps its reserve share of tpm: 1 slot of 8 keeps 1/8 of the tokens", () => {
    const { gov } = make({ limit: 8, reserve: 1, tpm: 80_000 });
    assert.equal(tokens(gov).reserve, 10_000);
    const explicit = make({ limit: 8, reserve: 1, tpm: 80_000, tpmReserve: 2000 }).gov;
    assert.equal(tokens(explicit).reserve, 2000, "tpmReserve sets it in tokens");
    const none = make({ limit: 8, reserve: 0, tpm: 80_000 }).gov;
    assert.equal(tokens(none).reserve, 0, "no reserve slot, no reserve share");
  });

  test("a bulk flood drains the bucket down to the reserve; the next interactive call is granted at once", async () => {
    const { gov, clock } = make({
      limit: 100,
      reserve: 1,
      tpm: 60_000,
      tpmReserve: 6000,
      queueTimeoutMs: 60_000,
    });
    const held: Lease[] = [];
    const order: string[] = [];
    // 27 bulk calls of 2000 tokens: 27 × 2000 = 54 000 leaves exactly the 6000 kept.
    for (let i = 0; i < 27; i++) held.push(await gov.acquire("L", { priority: "bulk", tokens: 2000 }));
    assert.equal(tokens(gov).available, 6000);
    const bulk = track(gov, order, "bulk", { priority: "bulk", tokens: 2000 });
    await flush();
    assert.deepEqual(order, [], "bulk waits: its take would eat into the reserve");
    const chat = await gov.acquire("L", { priority: "interactive", tokens: 5000 });
    assert.equal(chat.queuedMs, 0, "granted at once, from the reserve");
    assert.equal(tokens(gov).available, 1000);
    // Bulk waits until the refill brings the level to its 2000 + the 6000 kept: 7000 more, 7 s at 1000/s.
    await grantedExactlyIn(clock, order, 7000, "bulk");
    for (const l of [...held, chat, await bulk]) l.release();
  });

  test("a default-class call leaves the reserve too; aging does not unlock it", async () => {
    const { gov, clock } = make(HALF_KEPT_AGING);
    (await gov.acquire("L", { priority: "interactive", tokens: 40_000 })).release(); // level 20 000
    const order: string[] = [];
    const bulk = track(gov, order, "bulk", { priority: "bulk", tokens: 1000 });
    await flush();
    clock.advance(2000); // aged to interactive: still not its own class
    await flush();
    assert.deepEqual(order, [], "an aged bulk call is not interactive for the reserve");
    // An interactive call behind it takes the reserve the aged call may not.
    const chat = await gov.acquire("L", { priority: "interactive", tokens: 1000 });
    assert.equal(chat.queuedMs, 0);
    // 1000 tokens/s: level 22 000 at 2 s less chat's 1000 = 21 000; bulk needs 31 000: 10 s more.
    await grantedExactlyIn(clock, order, 10000, "bulk");
    chat.release();
    (await bulk).release();
  });

  test("an aged bulk waiter first in line does not hold back an interactive waiter the reserve covers", async () => {
    const { gov, clock } = make(HALF_KEPT_AGING);
    (await gov.acquire("L", { priority: "interactive", tokens: 60_000 })).release(); // empty
    const order: string[] = [];
    const bulk = track(gov, order, "bulk", { priority: "bulk", tokens: 1000 });
    clock.advance(2000); // level 2000; the bulk waiter has aged to interactive
    await flush();
    const chat = track(gov, order, "chat", { priority: "interactive", tokens: 3000 });
    await flush();
    assert.deepEqual(order, [], "3000 not there yet");
    clock.advance(1000); // level 3000: the interactive waiter fits; the aged bulk one needs 31 000
    await flush();
    assert.deepEqual(order, ["chat"]);
    (await chat).release();
    clock.advance(60_000);
    await flush();
    assert.deepEqual(order, ["chat", "bulk"]);
    (await bulk).release();
    assert.equal(clock.pendingTimers, 0, "no timer left once nothing waits");
  });

  test("Retry-After and cannot-cover-in-time count the reserve a non-interactive call must leave", async () => {
    const { gov } = make({ limit: 100, reserve: 1, tpm: 60_000, tpmReserve: 20_000, queueTimeoutMs: 10_000 });
    (await gov.acquire("L", { priority: "interactive", tokens: 60_000 })).release(); // empty, 1000/s
    // Bulk needs 5000 + 20 000 kept = 25 s of refill, past the 10 s queue timeout.
    const e = await refusal(gov.acquire("L", { priority: "bulk", tokens: 5000 }));
    assert.equal(e.reason, "cannot_cover_in_time");
    assert.equal(e.retryAfterMs, 25_000);
    assert.equal(e.reserve, 20_000);
    assert.match(e.message, /leave the 20000 kept for interactive calls/);
    // The same estimate as interactive needs 5 s: it queues.
    const order: string[] = [];
    const aborts = new AbortController();
    const chat = track(gov, order, "chat", { priority: "interactive", tokens: 5000, signal: aborts.signal });
    await flush();
    assert.deepEqual([order, gov.snapshot().lanes[0]!.queued], [[], 1]);
    aborts.abort();
    await chat.catch(() => {});
  });

  test("an estimate that fits the bucket only by eating into the reserve never fits a bulk call", async () => {
    const { gov } = make({ limit: 100, reserve: 1, tpm: 60_000, tpmReserve: 20_000 });
    const e = await refusal(gov.acquire("L", { priority: "bulk", tokens: 50_000 }));
    assert.deepEqual(
      [e.reason, e.needed, e.reserve, e.retryAfterMs],
      ["exceeds_capacity", 50_000, 20_000, 60_000],
    );
    (await gov.acquire("L", { priority: "interactive", tokens: 50_000 })).release();
  });

  test("check() and wait: false say the same for a bulk call at the reserve", async () => {
    const { gov } = make({ limit: 100, reserve: 1, tpm: 60_000, tpmReserve: 6000 });
    const big = await gov.acquire("L", { priority: "interactive", tokens: 54_000 });
    const e = await refusal(gov.acquire("L", { priority: "bulk", tokens: 1, wait: false }));
    assert.deepEqual([e.reason, e.reserve], ["no_wait", 6000]);
    (await gov.acquire("L", { priority: "interactive", tokens: 6000, wait: false })).release();
    big.release();
  });

  test("a request bucket keeps its share for interactive calls too", async () => {
    const clock = new ManualClock();
    const gov = new Governor({ clock, lanes: { L: { limit: 4, reserve: 1, rpm: 8 } } }); // keeps 2 requests
    for (let i = 0; i < 6; i++) (await gov.acquire("L", { priority: "bulk" })).release();
    const e = await refusal(gov.acquire("L", { priority: "bulk", wait: false }));
    assert.equal(e.unit, "requests");
    (await gov.acquire("L", { priority: "interactive" })).release();
    (await gov.acquire("L", { priority: "interactive" })).release();
  });

  test("an account keeps the largest share of its lanes, and a bulk call on any of them leaves it", async () => {
    const clock = new ManualClock();
    const gov = new Governor({
      clock,
      accounts: { prod: { tpm: 60_000 } },
      lanes: {
        A: { limit: 4, reserve: 1, account: "prod" }, // 1/4
        B: { limit: 10, reserve: 0, account: "prod" },
      },
    });
    assert.equal(gov.snapshot().accounts[0]!.tokens!.reserve, 15_000);
    const bulk = await gov.acquire("B", { priority: "bulk", tokens: 45_000 });
    const e = await refusal(gov.acquire("B", { priority: "bulk", tokens: 1, wait: false }));
    assert.equal(e.budget, "prod");
    (await gov.acquire("A", { priority: "interactive", tokens: 15_000 })).release();
    bulk.release();
  });

  test("refused: a negative or fractional reserve, or one beside no bucket, naming the option", () => {
    assert.throws(
      () => new Governor({ lanes: { L: { limit: 1, tpm: 100, tpmReserve: -1 } } }),
      /lanes\.L\.tpmReserve: expected a whole number ≥ 0/,
    );
    assert.throws(
      () => new Governor({ lanes: { L: { limit: 1, rpm: 100, rpmReserve: 0.5 } } }),
      /lanes\.L\.rpmReserve/,
    );
    assert.throws(
      () => new Governor({ lanes: { L: { limit: 1, tpmReserve: 10 } } }),
      /lanes\.L\.tpmReserve: expected set only with tpm/,
    );
    assert.throws(
      () => new Governor({ accounts: { a: { tpm: 10, rpmReserve: 1 } } }),
      /accounts\.a\.rpmReserve: expected set only with rpm/,
    );
  });

  test("at or above the capacity it is clamped to capacity − 1 (as reserve is to limit − 1)", () => {
    const { gov } = make({ limit: 2, tpm: 1000, tpmReserve: 5000 });
    assert.equal(tokens(gov).reserve, 999);
  });
});
