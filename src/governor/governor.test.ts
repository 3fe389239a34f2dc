import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "../core/clock.js";
import {
  ConfigError,
  isQueueFullError,
  KeyLimitError,
  QueueFullError,
  QueueTimeoutError,
  SluiceError,
  TimeoutError,
} from "../core/errors.js";
import type { Lease } from "../core/lease.js";
import type { GovernorOptions } from "../core/options.js";
import { currentPriority, withPriority } from "./context.js";
import { Governor } from "./governor.js";
import { flush, make, track } from "./test-helpers.js";

describe("Governor: seed 002 limiter card C2", () => {
  test("1. limit 0 is a pass-through: no waiting, nothing counted", async () => {
    const gov = new Governor({ defaults: { limit: 0 } });
    const leases = await Promise.all(Array.from({ length: 1000 }, () => gov.acquire("any")));
    assert.equal(leases.length, 1000);
    leases[0]!.release();
    assert.equal(gov.snapshot().lanes.length, 0);
  });

  test("2. serves waiters by class, then FIFO", async () => {
    const { gov } = make({ limit: 1, reserve: 0, queueLimit: 10 });
    const first = await gov.acquire("L");
    const order: string[] = [];
    const held: Lease[] = [];
    const grab = (name: string, priority: "interactive" | "default" | "bulk") =>
      track(gov, order, name, { priority }).then((l) => held.push(l));
    const waiting = [
      grab("bulk-1", "bulk"),
      grab("default-1", "default"),
      grab("interactive-1", "interactive"),
      grab("default-2", "default"),
      grab("bulk-2", "bulk"),
    ];
    first.release();
    for (let i = 0; i < waiting.length; i++) {
      await flush();
      held[i]!.release();
    }
    await Promise.all(waiting);
    assert.deepEqual(order, ["interactive-1", "default-1", "default-2", "bulk-1", "bulk-2"]);
  });

  test("2. promotes a waiter one class per 60 s of waiting", async () => {
    const { gov, clock } = make({ limit: 1, reserve: 0, queueTimeoutMs: 600_000 });
    const first = await gov.acquire("L");
    const order: string[] = [];
    const bulk = track(gov, order, "bulk-old", { priority: "bulk" });
    clock.advance(120_000); // two steps: bulk → default → interactive
    const inter = track(gov, order, "interactive-new", { priority: "interactive" });
    first.release();
    (await bulk).release();
    (await inter).release();
    assert.deepEqual(order, ["bulk-old", "interactive-new"]);
  });

  test("3. keeps the reserve for interactive callers, and aging does not unlock it", async () => {
    const { gov, clock, lane } = make({ limit: 3, reserve: 1, queueTimeoutMs: 600_000 });
    const a = await gov.acquire("L");
    const b = await gov.acquire("L");
    const order: string[] = [];
    const bulk = track(gov, order, "bulk", { priority: "bulk" });
    clock.advance(180_000); // aged to interactive, still not its own class
    await flush();
    assert.deepEqual(order, []);
    assert.equal(lane().inflight, 2);
    const inter = await track(gov, order, "interactive", { priority: "interactive" });
    assert.deepEqual(order, ["interactive"]);
    a.release(); // one slot free, and it is the reserve: the aged bulk waiter still may not take it
    await flush();
    assert.deepEqual(order, ["interactive"]);
    b.release();
    await bulk;
    assert.deepEqual(order, ["interactive", "bulk"]);
    for (const l of [inter, await bulk]) l.release();
    assert.equal(lane().inflight, 0);
  });

  test("3. clamps the reserve to limit − 1", () => {
    const { lane } = make({ limit: 2, reserve: 5 });
    assert.equal(lane().reserve, 1);
  });

  test("4. a queue timeout names the lane, the wait and the position", async () => {
    const { gov, clock, lane } = make({ limit: 1, queueTimeoutMs: 30_000 });
    const held = await gov.acquire("L");
    const p1 = gov.acquire("L");
    const p2 = gov.acquire("L");
    clock.advance(30_000);
    const e1 = await p1.catch((e: unknown) => e);
    assert.ok(e1 instanceof QueueTimeoutError);
    assert.ok(e1 instanceof TimeoutError);
    assert.equal(e1.code, "queue_timeout");
    assert.equal(e1.lane, "L");
    assert.equal(e1.waitedMs, 30_000);
    assert.equal(e1.position, 1);
    assert.match(e1.message, /30000 ms .* lane L .*position 1/);
    await assert.rejects(p2, QueueTimeoutError);
    assert.equal(lane().queue_timeouts_5m, 2);
    held.release();
    assert.deepEqual([lane().inflight, lane().queued], [0, 0]);
  });

  test("5. an aborted waiter leaves no residue and the next waiter still gets the slot", async () => {
    const { gov, clock, lane } = make({ limit: 1, queueTimeoutMs: 1000 });
    const held = await gov.acquire("L");
    const ac = new AbortController();
    const aborted = gov.acquire("L", { signal: ac.signal });
    const next = gov.acquire("L");
    ac.abort(new Error("caller went away"));
    await assert.rejects(aborted, /caller went away/);
    assert.equal(lane().queued, 1);
    held.release();
    (await next).release();
    clock.advance(5000);
    assert.deepEqual([lane().inflight, lane().queued], [0, 0]);
  });

  test("5. an already-aborted signal rejects before queueing", async () => {
    const { gov, lane } = make({ limit: 1 });
    await assert.rejects(gov.acquire("L", { signal: AbortSignal.abort(new Error("no")) }), /no/);
    assert.equal(lane().inflight, 0);
  });

  test("6. withPriority tags sub-tasks, and an unknown class is a TypeError naming the allowed ones", async () => {
    const { gov } = make({ limit: 1, reserve: 0 });
    const held = await gov.acquire("L");
    const order: string[] = [];
    const bulk = withPriority("bulk", () => Promise.resolve().then(() => track(gov, order, "bulk")));
    const inter = withPriority("interactive", async () => {
      await Promise.resolve();
      assert.equal(currentPriority(), "interactive");
      return track(gov, order, "interactive");
    });
    await flush();
    held.release();
    (await inter).release();
    (await bulk).release();
    assert.deepEqual(order, ["interactive", "bulk"]);
    assert.throws(() => withPriority("urgent" as never, () => 0), /interactive, default, bulk/);
    await assert.rejects(gov.acquire("L", { priority: "urgent" as never }), TypeError);
  });

  test("an unknown class is the same TypeError from acquire, tryAcquire and check, and counts nothing", async () => {
    const { gov } = make({ limit: 2, reserve: 0 });
    const message = /priority must be one of interactive, default, bulk; got "urgent"/;
    await assert.rejects(gov.acquire("L", { priority: "urgent" as never }), message);
    assert.throws(() => gov.tryAcquire("L", { priority: "urgent" as never }), message);
    assert.throws(() => gov.check("L", { priority: "urgent" as never }), message);
    assert.throws(() => withPriority("urgent" as never, () => gov.check("L")), /interactive, default, bulk/);
    assert.deepEqual(
      [gov.snapshot().lanes[0]!.inflight, gov.snapshot().lanes[0]!.queued],
      [0, 0],
      "nothing was counted",
    );
  });

  test("6. the snapshot has the §4 lane shape, wait quantiles and the 60 s saturated rule", async () => {
    const { gov, clock, lane } = make({ limit: 1, reserve: 0, queueTimeoutMs: 600_000 });
    const held = await gov.acquire("L");
    const waiter = gov.acquire("L", { priority: "bulk" });
    clock.advance(59_000);
    assert.equal(lane().saturated, false);
    clock.advance(1000);
    const s = lane();
    assert.equal(s.saturated, true);
    assert.equal(s.state, "local_queue", "callers queue at the lane's limit (seed 002's first state)");
    assert.equal(s.oldest_wait_s, 60);
    assert.deepEqual(s.queued_by_priority, { interactive: 0, default: 0, bulk: 1 });
    held.release();
    (await waiter).release();
    const after = lane();
    assert.equal(after.saturated, false);
    assert.equal(after.state, "ok");
    // two grants: 0 s and 60 s; p90 within one log bucket (≈ 25 %) of 60 s
    assert.ok(after.wait_p90_s_5m >= 60 && after.wait_p90_s_5m < 75, String(after.wait_p90_s_5m));
    assert.deepEqual(Object.keys(after).sort(), [
      "inflight",
      "lane",
      "limit",
      "oldest_wait_s",
      "paused_s",
      "queue_limit",
      "queue_timeouts_5m",
      "queued",
      "queued_by_priority",
      "reserve",
      "saturated",
      "state",
      "wait_p50_s_5m",
      "wait_p90_s_5m",
      "width",
    ]);
    clock.advance(5 * 60_000 + 1);
    assert.equal(lane().wait_p90_s_5m, 0);
  });
});

describe("Governor: refusals", () => {
  test("sheds the newest lower-class waiter when the queue is full", async () => {
    const { gov, lane } = make({ limit: 1, reserve: 0, queueLimit: 2 });
    const held = await gov.acquire("L");
    const b1 = gov.acquire("L", { priority: "bulk" });
    const b2 = gov.acquire("L", { priority: "bulk" });
    const inter = gov.acquire("L", { priority: "interactive" });
    const e = await b2.catch((x: unknown) => x);
    assert.ok(e instanceof QueueFullError);
    assert.equal(e.reason, "shed");
    assert.equal(lane().queued, 2);
    // nothing lower than bulk to shed: the arrival itself is refused
    await assert.rejects(
      gov.acquire("L", { priority: "bulk" }),
      (x: unknown) => isQueueFullError(x) && x.reason === "full",
    );
    held.release();
    (await inter).release();
    (await b1).release();
  });

  test("a full queue refuses at once with the numbers a client needs", async () => {
    const { gov } = make({ limit: 2, reserve: 0, queueLimit: 1 });
    const held = [await gov.acquire("L"), await gov.acquire("L")];
    const queued = gov.acquire("L");
    const e = await gov.acquire("L").catch((x: unknown) => x);
    assert.ok(e instanceof QueueFullError && e instanceof SluiceError);
    assert.deepEqual(
      [e.code, e.httpStatus, e.inflight, e.queued, e.queueLimit, e.width],
      ["queue_full", 429, 2, 1, 1, 2],
    );
    assert.ok(e.retryAfterMs >= 1000);
    assert.match(e.message, /2\/2 in flight, 1\/1 queued/);
    for (const l of held) l.release();
    (await queued).release();
  });

  test("refuses on arrival when the expected wait already exceeds the queue timeout", async () => {
    const { gov, clock } = make({ limit: 2, reserve: 0, queueLimit: 100, queueTimeoutMs: 30_000 });
    // measure the drain rate: 10 calls held 20 s each → 2 slots drain one call per 10 s
    for (let i = 0; i < 10; i++) {
      const l = await gov.acquire("L");
      clock.advance(20_000);
      l.release();
    }
    const held = [await gov.acquire("L"), await gov.acquire("L")];
    // expected waits 10 s, 20 s and 30 s: each fits within the 30 s queue timeout
    const waiters = [gov.acquire("L"), gov.acquire("L"), gov.acquire("L")];
    assert.equal(gov.snapshot().lanes[0]!.queued, 3);
    const e = await gov.acquire("L").catch((x: unknown) => x); // 40 s: over
    assert.ok(e instanceof QueueFullError);
    assert.equal(e.reason, "expected_wait");
    assert.equal(e.retryAfterMs, 40_000);
    for (const l of held) l.release();
    for (const w of waiters) (await w).release();
  });

  test("a key past its in flight + queued bound gets KeyLimitError; its class is capped", async () => {
    const clock = new ManualClock();
    const gov = new Governor({
      clock,
      lanes: { L: { limit: 1, reserve: 0 } },
      keys: { "team-a": { maxInflight: 2, maxPriority: "default" } },
    });
    const a = await gov.acquire("L", { key: "team-a", priority: "interactive" });
    assert.equal(a.priority, "default");
    const b = gov.acquire("L", { key: "team-a" });
    const e = await gov.acquire("L", { key: "team-a" }).catch((x: unknown) => x);
    assert.ok(e instanceof KeyLimitError);
    assert.deepEqual([e.code, e.key, e.inflight, e.queued, e.maxInflight], ["key_limit", "team-a", 1, 1, 2]);
    a.release();
    (await b).release();
    assert.deepEqual(gov.snapshot().keys, [{ key: "team-a", max_inflight: 2, inflight: 0, queued: 0 }]);
  });
});

describe("Governor: budgets", () => {
  test("a group shared by lanes grants the best waiter across them, without head-of-line blocking", async () => {
    const clock = new ManualClock();
    const gov = new Governor({
      clock,
      groups: { gb10: { limit: 2 } },
      lanes: {
        qwen: { limit: 1, reserve: 0, group: "gb10" },
        embed: { limit: 5, reserve: 0, group: "gb10" },
      },
    });
    const q1 = await gov.acquire("qwen");
    const order: string[] = [];
    const q2 = gov.acquire("qwen").then((l) => {
      order.push("qwen-2");
      return l;
    }); // blocked by its lane
    const e1 = await gov.acquire("embed"); // not blocked by qwen's full lane
    const e2 = gov.acquire("embed", { priority: "bulk" }).then((l) => {
      order.push("embed-bulk");
      return l;
    });
    const e3 = gov.acquire("embed", { priority: "interactive" }).then((l) => {
      order.push("embed-int");
      return l;
    });
    assert.equal(gov.snapshot().groups[0]!.inflight, 2);
    e1.release(); // group frees one: the best waiter across lanes is embed-int
    await flush();
    assert.deepEqual(order, ["embed-int"]);
    q1.release(); // qwen's lane and the group free one: qwen-2 (default) beats embed-bulk
    await flush();
    assert.deepEqual(order, ["embed-int", "qwen-2"]);
    (await e3).release();
    await flush();
    assert.deepEqual(order, ["embed-int", "qwen-2", "embed-bulk"]);
    (await q2).release();
    (await e2).release();
    assert.equal(gov.snapshot().groups[0]!.inflight, 0);
  });

  test("invalid options fail at construction with a ConfigError naming the path", () => {
    const cases: Array<[GovernorOptions, string]> = [
      [{ lanes: { a: { limit: -1 } } }, "lanes.a.limit"],
      [{ lanes: { a: { limit: 1.5 } } }, "lanes.a.limit"],
      [{ lanes: { a: { limit: 2, group: "nope" } } }, "lanes.a.group"],
      [{ lanes: { a: { limit: 2, queueTimeoutMs: 0 } } }, "lanes.a.queueTimeoutMs"],
      [{ lanes: { a: { limit: 2, breaker: { backoffFactor: 0.5 } } } }, "lanes.a.breaker.backoffFactor"],
      [{ lanes: { a: { limit: 2, fallback: "a" } } }, "lanes.a.fallback"],
      [{ lanes: { a: { limit: 2, limt: 3 } as never } }, "lanes.a.limt"],
      [{ groups: { g: { limit: 0 } } }, "groups.g.limit"],
      [{ keys: { k: { maxInflight: 1, maxPriority: "urgent" as never } } }, "keys.k.maxPriority"],
    ];
    for (const [options, path] of cases) {
      assert.throws(
        () => new Governor(options),
        (e: unknown) => e instanceof ConfigError && e.path === path,
        `expected ConfigError at ${path}`,
      );
    }
  });
});

describe("Governor: the system clock inside a long microtask drain (issue 13)", () => {
  test("a drain that never yields to the event loop keeps timestamps current: a waiter that joins late is not timed out early", async () => {
    const gov = new Governor({ lanes: { l: { limit: 1, queueTimeoutMs: 200 } } });
    const held = await gov.acquire("l");
    await null; // from here on one microtask drain: each `await null` resumes without a turn of the loop
    const until = performance.now() + 300;
    while (performance.now() < until) {
      assert.equal(gov.tryAcquire("l"), undefined); // reads the clock, takes nothing
      await null;
    }
    // Joins 300 ms into the drain: its 200 ms deadline is counted from now, not from the drain's start.
    const waiting = gov.acquire("l");
    const outcome = await Promise.race([
      waiting.then(
        () => "granted",
        (error: unknown) => (error instanceof QueueTimeoutError ? "timed out" : String(error)),
      ),
      new Promise((resolve) => setTimeout(resolve, 100, "still waiting")),
    ]);
    assert.equal(
      outcome,
      "still waiting",
      "100 ms after joining, a waiter with a 200 ms queue timeout waits",
    );
    held.release();
    (await waiting).release();
    gov.close();
  });
});
