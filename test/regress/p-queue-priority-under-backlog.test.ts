/**
 * Peer lesson (DEPS.md): test priority under a real backlog, not with instant tasks — with
 * nothing queued every scheduler "passes" trivially. Here 100 bulk calls wait behind full
 * slots when one interactive call arrives (DESIGN §1.1).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Governor, type Lease, type Priority } from "../../src/index.js";
import { ManualClock } from "../../src/testing.js";
import { flush, track } from "../helpers/index.js";

const LONG = 3_600_000; // no timeouts, no aging unless a test advances the clock on purpose

function setup(reserve: number, agingMs = LONG) {
  const clock = new ManualClock();
  const gov = new Governor({
    clock,
    lanes: { L: { limit: 2, reserve, queueLimit: 500, queueTimeoutMs: LONG, agingMs } },
  });
  const order: string[] = [];
  const held: Lease[] = [];
  const enqueue = (name: string, priority: Priority) =>
    gov.acquire("L", { priority }).then((lease) => {
      order.push(name);
      held.push(lease);
    });
  /** Releases the oldest held lease and lets the grant it causes settle. */
  const releaseOne = async () => {
    held.shift()!.release();
    await flush();
  };
  return { clock, gov, order, held, enqueue, releaseOne };
}

describe("regress p-queue: priority under a real backlog", () => {
  test("one interactive arrival behind 100 queued bulk calls is served next", async () => {
    const { gov, order, held, enqueue, releaseOne } = setup(0);
    held.push(await gov.acquire("L", { priority: "bulk" }), await gov.acquire("L", { priority: "bulk" }));
    const done = [];
    for (let i = 0; i < 100; i++) done.push(enqueue(`bulk-${i}`, "bulk"));
    await flush();
    done.push(enqueue("interactive", "interactive"));
    assert.equal(gov.snapshot().lanes[0]!.queued, 101);
    await releaseOne();
    assert.deepEqual(order, ["interactive"]);
    while (order.length < 101) await releaseOne();
    await Promise.all(done);
    assert.deepEqual(
      order,
      ["interactive", ...Array.from({ length: 100 }, (_, i) => `bulk-${i}`)],
      "then the bulk calls in arrival order",
    );
    while (held.length > 0) await releaseOne();
    assert.deepEqual([gov.snapshot().lanes[0]!.inflight, gov.snapshot().lanes[0]!.queued], [0, 0]);
  });

  test("with a reserve, the interactive arrival takes it at once while 100 bulk calls wait", async () => {
    const { gov, order, held, enqueue, releaseOne } = setup(1);
    held.push(await gov.acquire("L", { priority: "bulk" })); // 1 = limit − reserve: bulk is full
    for (let i = 0; i < 100; i++) void enqueue(`bulk-${i}`, "bulk");
    await flush();
    assert.deepEqual(order, [], "the bulk backlog cannot take the reserved slot");
    await enqueue("interactive", "interactive");
    assert.deepEqual(order, ["interactive"]);
    const lane = gov.snapshot().lanes[0]!;
    assert.deepEqual([lane.inflight, lane.queued], [2, 100]);
    // Releasing the interactive call gives the reserve back, not to the bulk backlog.
    held.pop()!.release();
    await flush();
    assert.deepEqual(order, ["interactive"]);
    await releaseOne();
    assert.deepEqual(order, ["interactive", "bulk-0"]);
  });

  test("an aged bulk call goes before a newer default one, but never into the reserve", async () => {
    const { clock, gov, order, held, enqueue, releaseOne } = setup(1, 1000);
    held.push(await gov.acquire("L", { priority: "default" }));
    const bulk = track(enqueue("bulk", "bulk"));
    clock.advance(2000); // two aging steps: bulk now ranks as interactive…
    void enqueue("default", "default");
    await flush();
    assert.equal(bulk.settled, false, "…but aging does not unlock the reserve (DESIGN §1.1)");
    await releaseOne();
    assert.deepEqual(order, ["bulk"]);
    await releaseOne();
    assert.deepEqual(order, ["bulk", "default"]);
    held.pop()!.release();
  });

  for (const [reserve, expected] of [
    [0, ["bulk", "interactive"]],
    [1, ["interactive", "bulk"]],
  ] as const) {
    test(`a bulk call aged to interactive goes first only where the reserve is not at stake (reserve ${reserve})`, async () => {
      const { clock, gov, order, held, enqueue, releaseOne } = setup(reserve, 1000);
      held.push(
        await gov.acquire("L", { priority: "interactive" }),
        await gov.acquire("L", { priority: "interactive" }),
      );
      void enqueue("bulk", "bulk");
      clock.advance(2000); // two aging steps: the bulk call now ranks as interactive
      void enqueue("interactive", "interactive");
      await flush();
      // Leases end one by one. Without a reserve both waiters rank interactive and the bulk call arrived
      // first; with one, the freed slot is the reserve, which only an own-class interactive call
      // may take.
      while (order.length < 2) await releaseOne();
      assert.deepEqual(order, expected);
      while (held.length > 0) await releaseOne();
      assert.deepEqual([gov.snapshot().lanes[0]!.inflight, gov.snapshot().lanes[0]!.queued], [0, 0]);
    });
  }
});
