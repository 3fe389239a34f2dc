/**
 * Peer lesson (cockatiel 3.2.1, DEPS.md): an aborted queued waiter kept its slot. In sluice an
 * abort while queued removes the waiter at once, frees its place in the queue, rejects with
 * `signal.reason`, and the next waiter starts when a slot frees (STYLE G9).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Governor, isQueueFullError, type Lease } from "../../src/index.js";
import { ManualClock } from "../../src/testing.js";
import { flush, track } from "../helpers/index.js";

function setup() {
  const clock = new ManualClock();
  const gov = new Governor({
    clock,
    groups: { g: { limit: 4 } },
    keys: { k1: { maxInflight: 3 } },
    lanes: { L: { limit: 1, reserve: 0, queueLimit: 2, queueTimeoutMs: 1000, group: "g" } },
  });
  const lane = () => gov.snapshot().lanes[0]!;
  return { clock, gov, lane };
}

describe("regress cockatiel: an abort while queued", () => {
  test("frees the queue slot, and the next waiter starts when a slot frees", async () => {
    const { gov, lane } = setup();
    const order: string[] = [];
    const noted = (name: string) => (lease: Lease) => {
      order.push(name);
      return lease;
    };
    const held = await gov.acquire("L");
    const ac = new AbortController();
    const first = gov.acquire("L", { signal: ac.signal, key: "k1" });
    const second = gov.acquire("L").then(noted("second"));
    await assert.rejects(gov.acquire("L"), (e) => isQueueFullError(e) && e.reason === "full");

    const reason = new Error("client went away");
    ac.abort(reason);
    await assert.rejects(first, (e) => e === reason);
    assert.deepEqual([lane().inflight, lane().queued], [1, 1]);
    assert.deepEqual(gov.snapshot().keys[0], { key: "k1", max_inflight: 3, inflight: 0, queued: 0 });

    // The freed queue place takes a new arrival.
    const third = gov.acquire("L").then(noted("third"));
    held.release();
    const l2 = await second;
    assert.deepEqual(order, ["second"]);
    l2.release();
    const l3: Lease = await third;
    assert.deepEqual(order, ["second", "third"]);
    l3.release();
    assert.deepEqual([lane().inflight, lane().queued], [0, 0]);
    assert.equal(gov.snapshot().groups[0]!.inflight, 0);
  });

  test("an aborted waiter leaves no residue in any count, queue or timer", async () => {
    const { clock, gov, lane } = setup();
    const held = await gov.acquire("L", { key: "k1" });
    const ac = new AbortController();
    const waiter = track(gov.acquire("L", { signal: ac.signal, key: "k1" }));
    ac.abort(new Error("stop"));
    await flush();
    assert.equal(waiter.settled, true);
    held.release();
    // The deadline timer armed for the waiter fires harmlessly and is not re-armed.
    clock.advance(1000);
    assert.equal(clock.pendingTimers, 0);
    assert.deepEqual([lane().inflight, lane().queued], [0, 0]);
    assert.deepEqual(gov.snapshot().keys[0], { key: "k1", max_inflight: 3, inflight: 0, queued: 0 });
    assert.equal(gov.snapshot().groups[0]!.inflight, 0);
  });

  test("an abort after the grant does not take the lease back", async () => {
    const { gov, lane } = setup();
    const held = await gov.acquire("L");
    const ac = new AbortController();
    const waiter = gov.acquire("L", { signal: ac.signal });
    held.release();
    const lease = await waiter;
    ac.abort(new Error("too late"));
    await flush();
    assert.equal(lane().inflight, 1, "the abort listener was removed at the grant");
    lease.release();
    assert.deepEqual([lane().inflight, lane().queued], [0, 0]);
  });

  test("an already aborted signal is refused before queueing", async () => {
    const { gov, lane } = setup();
    const reason = new Error("gone");
    await assert.rejects(gov.acquire("L", { signal: AbortSignal.abort(reason) }), (e) => e === reason);
    assert.deepEqual([lane().inflight, lane().queued], [0, 0]);
  });
});
