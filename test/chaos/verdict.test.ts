/**
 * The chaos verdict on ledgers written by hand, so its judgements are known to catch what they
 * claim (a chaos run that passes proves little unless a bad run would fail): a stretch over a
 * limit is attributed to the fault in force and held to that fault's bound during and after it;
 * with no fault in force any excess fails; a waiter with room at the pods past the threshold is
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

  test("an excess while a fault is in force is held to that fault's bound, during and after", () => {
    // Redis stopped 1000–4000: during, the local share (3 × ⌊6 ÷ 3⌋ = 6) allows nothing above 6;
    // for a heartbeat after, what was granted in the gap (6) is allowed.
    const ledger = ledgerOf([
      [500, 6],
      [2000, 1],
      [2100, -1],
      [4200, 2],
      [4300, -2],
    ]);
    const { byCause } = overshoots(ledger, windowsOf([fault("redis-stop", 1000, 4000)], bounds));
    const s = byCause.get("redis-stop")!;
    assert.equal(s.maxExcess, 2);
    assert.equal(s.violations.length, 1, "only the excess while Redis was away breaks the bound");
    assert.equal(s.violations[0]!.phase, "during");
    assert.equal(byCause.get("steady"), undefined);
  });

  test("an excess that outlasts its fault's window is the steady state's", () => {
    const ledger = ledgerOf([
      [500, 7],
      [8000, -1],
    ]);
    const { byCause } = overshoots(ledger, windowsOf([fault("sighup", 400, 400)], bounds));
    assert.equal(byCause.get("sighup")!.violations.length, 1);
    assert.equal(byCause.get("steady")!.violations.length, 1, "past the window it is nobody's allowance");
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
    const excused = stuckWaiters(ledger, shape, windowsOf([fault("redis-stop", 900, 3500)], bounds), 2000);
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
