/**
 * Each key's (tenant's) part of a lane in the snapshot (issue 24, core/flow-shares.ts), on a
 * ManualClock: per flow its calls in flight and queued on the lane, its configured share (its
 * weight over the active flows' weights) and the part of the lane's calls it holds.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "../core/clock.js";
import type { FlowShareSnapshot } from "../core/flow-shares.js";
import type { Lease } from "../core/lease.js";
import { Governor } from "./governor.js";
import { flush } from "./test-helpers.js";

const lane = { limit: 4, reserve: 0, queueLimit: 100, queueTimeoutMs: 1e9 };

const keys = {
  a: { maxInflight: 100, weight: 1 },
  b: { maxInflight: 100, weight: 3 },
  c: { maxInflight: 100, tenant: "T" },
  d: { maxInflight: 100, tenant: "T" },
};

function setup() {
  const clock = new ManualClock();
  const gov = new Governor({
    clock,
    keys,
    tenants: { T: { weight: 2 } },
    lanes: { L: lane, M: lane },
  });
  const held: Record<string, Lease[]> = {};
  const call = (key: string | undefined, on = "L") =>
    void gov.acquire(on, key === undefined ? {} : { key }).then((l) => {
      const name = key ?? "-";
      held[name] = [...(held[name] ?? []), l];
    });
  const flows = (on = "L"): FlowShareSnapshot[] | undefined =>
    gov.snapshot().lanes.find((l) => l.lane === on)!.flows;
  return { gov, held, call, flows };
}

const row = (f: FlowShareSnapshot) => [f.flow, f.inflight, f.queued, f.weight, f.share, f.used];

describe("a lane's flows in the snapshot", () => {
  test("two keys of weights 1 and 3: in flight and queued, shares 25 % / 75 %", async () => {
    const { held, call, flows } = setup();
    assert.equal(flows(), undefined, "no keyed call on the lane: no flows");
    for (let i = 0; i < 4; i++) call("a");
    await flush();
    for (let i = 0; i < 6; i++) call("b");
    for (let i = 0; i < 6; i++) call("a");
    await flush();
    // a came first and holds every slot: 100 % of the lane for a share of 25 %.
    assert.deepEqual(flows()!.map(row), [
      ["key:a", 4, 6, 1, 0.25, 1],
      ["key:b", 0, 6, 3, 0.75, 0],
    ]);
    // a's four calls end: the fair queue gives b three of the four slots, a one.
    for (const l of held.a!.splice(0)) l.release();
    await flush();
    assert.deepEqual(flows()!.map(row), [
      ["key:a", 1, 5, 1, 0.25, 0.25],
      ["key:b", 3, 3, 3, 0.75, 0.75],
    ]);
    assert.deepEqual(flows("M"), undefined, "a lane counts only its own calls");
  });

  test("a tenant's keys are one flow; calls with no key are the anonymous flow; ends are counted", async () => {
    const { gov, held, call, flows } = setup();
    call("c");
    call("d");
    call(undefined);
    call("b", "M");
    await flush();
    assert.deepEqual(flows()!.map(row), [
      ["tenant:T", 2, 0, 2, 0.667, 0.667],
      ["anonymous", 1, 0, 1, 0.333, 0.333],
    ]);
    assert.deepEqual(flows("M")!.map(row), [["key:b", 1, 0, 3, 1, 1]]);
    for (const l of [...held.c!, ...held.d!, ...held.b!]) l.succeeded();
    await flush();
    assert.equal(flows(), undefined, "only anonymous calls left: nothing to share out");
    assert.equal(flows("M"), undefined);
    assert.equal(gov.snapshot().lanes[0]!.inflight, 1);
  });

  test("a lane added by a reload after a key's calls is counted on its own; a lane removed keeps its calls out of the others'", async () => {
    const { gov, held, call, flows } = setup();
    call("a");
    call("b", "M");
    await flush();
    gov.reconfigure({ keys, tenants: { T: { weight: 2 } }, lanes: { L: lane, N: lane } });
    call("a", "N");
    call("a", "N");
    await flush();
    assert.deepEqual(flows("L")!.map(row), [["key:a", 1, 0, 1, 1, 1]]);
    assert.deepEqual(
      flows("N")!.map(row),
      [["key:a", 2, 0, 1, 1, 1]],
      "b's call on the removed M is not N's",
    );
    for (const l of [...held.a!, ...held.b!]) l.release();
    await flush();
    assert.equal(flows("L"), undefined);
    assert.equal(flows("N"), undefined);
  });
});
