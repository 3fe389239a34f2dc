/**
 * The chaos verdict on ledgers written by hand, so its judgements are known to catch what they
 * claim (a chaos run that passes proves little unless a bad run would fail): a start at the pods
 * over a limit is held to the bound of the fault whose window is open (what a paused replica held,
 * for a pause past the lease); with no window open any start over a limit fails, while calls
 * started within an allowance may run on; a waiter with room at the pods past the threshold is
 * stuck unless a fault excuses it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { faultBounds } from "./bounds.js";
import type { FaultRecord } from "./faults.js";
import { type CallRecord, Ledger } from "./ledger.js";
import { defaultShape } from "./shape.js";
import { overshoots, stuckWaiters, windowsOf } from "./verdict.js";

const shape = defaultShape(3); // lane 6 (reserve 1), pods of 4, lease 3 s, 3 replicas expected
const bounds = faultBounds(shape);

/** A ledger whose lane moves by `steps` ([time, delta]); the pods split it evenly. */
function ledgerOf(steps: Array<[number, number]>): Ledger {
  const ledger = new Ledger();
  const lane = ledger.gauge("lane", shape.laneLimit);
  const pods = [ledger.gauge("pod:p0", shape.podLimit), ledger.gauge("pod:p1", shape.podLimit)];
  let n = 0;
  for (const [t, d] of steps) {
    lane.move(t, d);
    for (let i = 0; i < Math.abs(d); i++) {
      const pod = d > 0 ? pods[n % 2]! : pods[(n - 1 + 2) % 2]!;
      pod.move(t, Math.sign(d));
      n += Math.sign(d);
    }
  }
  return ledger;
}

function call(ledger: Ledger, c: Partial<CallRecord> & { id: string; sentAt: number }): void {
  ledger.calls.set(c.id, {
    replica: 0,
    priority: "default",
    key: "k-free",
    stream: false,
    serviceMs: 100,
    runs: 1,
    ...c,
  });
}

const fault = (kind: FaultRecord["kind"], startAt: number, liftedAt: number): FaultRecord => ({
  kind,
  detail: "by hand",
  held: {},
  startAt,
  liftedAt,
});

describe("chaos verdict", () => {
  test("an excess with no fault in force is a violation of 'steady'", () => {
    const ledger = ledgerOf([
      [100, 6],
      [200, 1],
      [300, -1],
    ]);
    const { byCause } = overshoots(ledger, []);
    const steady = byCause.get("steady")!;
    assert.equal(steady.maxExcess, 1);
    assert.equal(steady.violations.length, 1);
    assert.equal(steady.violations[0]!.ms, 100);
  });

  test("a start over the limit while a fault's window is open is held to that fault's bound", () => {
    // Redis stopped 1000–4000, its window open until 4000 + reconnect + lease: the Redis-away
    // allowance on the lane (limit 6, 3 replicas, f = 2) is the calls started in the heartbeat
    // before it (6), capped at (3 − 1) × 2 = 4.
    const ledger = ledgerOf([
      [500, 6],
      [2000, 4],
      [2100, -4],
      [4200, 5],
      [4300, -5],
    ]);
    const { byCause } = overshoots(
      ledger,
      windowsOf([fault("redis-stop", 1000, 4000)], bounds, ledger, 1000),
    );
    const s = byCause.get("redis-stop")!;
    assert.equal(s.maxExcess, 5);
    assert.equal(s.allowed, 4);
    assert.equal(s.violations.length, 1, "only the start past the allowance breaks the bound");
    assert.equal(s.violations[0]!.phase, "after");
    assert.equal(byCause.get("steady"), undefined);
  });

  test("Redis away allows nothing over when no call started in the heartbeat before it", () => {
    const ledger = ledgerOf([
      [500, 6],
      [6000, 1],
      [6100, -1],
    ]);
    const { byCause } = overshoots(
      ledger,
      windowsOf([fault("redis-stop", 5000, 7000)], bounds, ledger, 1000),
    );
    const s = byCause.get("redis-stop")!;
    assert.equal(s.allowed, 0, "every replica had heard the others, with no grant since");
    assert.equal(s.violations.length, 1);
  });

  test("calls started within a window may run on after it; a start over the limit after it is steady's", () => {
    const ledger = ledgerOf([
      [500, 7],
      [2000, 1],
      [8000, -8],
    ]);
    const { byCause } = overshoots(ledger, windowsOf([fault("sighup", 400, 400)], bounds, ledger, 1000));
    assert.equal(byCause.get("sighup")!.violations.length, 1, "a reload allows nothing over the limit");
    const steady = byCause.get("steady")!;
    assert.equal(steady.violations.length, 1, "the start at 2000, with no window open");
    assert.equal(steady.violations[0]!.at, 2000);
  });

  test("a pause past the lease allows what its replica held when paused", () => {
    const ledger = ledgerOf([
      [500, 6],
      [2000, 2],
      [2100, 1],
    ]);
    const paused = { ...fault("pause-long", 1000, 5000), held: { lane: 2 } };
    const { byCause } = overshoots(ledger, windowsOf([paused], bounds, ledger, 1000));
    const lane = byCause.get("pause-long")!.violations.filter((v) => v.gauge === "lane");
    assert.equal(lane.length, 1, "8 is within 6 + the 2 it held; 9 is not");
    assert.equal(lane[0]!.seen, 9);
  });

  test("a waiter with room at the pods past the threshold is stuck; one excused by a fault is not", () => {
    const ledger = ledgerOf([
      [0, 3],
      [5000, -3],
    ]); // lane at 3 of 6 (5 for a default call) throughout
    call(ledger, { id: "stuck", sentAt: 1000, podStartAt: 4000 });
    call(ledger, { id: "quick", sentAt: 1000, podStartAt: 1500 });
    call(ledger, { id: "stuck-too", sentAt: 1000, podStartAt: 4000, replica: 1 });
    const stuck = stuckWaiters(ledger, shape, [], 2000);
    assert.deepEqual(
      stuck.map((s) => s.call),
      ["stuck", "stuck-too"],
    );
    const excused = stuckWaiters(
      ledger,
      shape,
      windowsOf([fault("redis-stop", 900, 3500)], bounds, ledger, 1000),
      2000,
    );
    assert.deepEqual(excused, [], "Redis away (and a heartbeat after): waiting with room is the policy");
  });

  test("a default waiter while the lane is at limit − reserve has no room; an interactive one has", () => {
    const ledger = ledgerOf([
      [0, 5],
      [5000, -5],
    ]);
    call(ledger, { id: "default", priority: "default", sentAt: 1000, podStartAt: 4500 });
    call(ledger, { id: "interactive", priority: "interactive", sentAt: 1000, podStartAt: 4500 });
    assert.deepEqual(
      stuckWaiters(ledger, shape, [], 2000).map((s) => s.call),
      ["interactive"],
    );
  });
});
