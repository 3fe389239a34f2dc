import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { PodSnapshot, Snapshot } from "../../core/snapshot.js";
import { type LaneRoute, readiness } from "./health.js";

function pod(id: string, lanes: string[], state: Partial<PodSnapshot> = {}): PodSnapshot {
  return {
    id,
    lane: lanes[0]!,
    lanes,
    width: 1,
    ceiling: 1,
    floor: 1,
    inflight: 0,
    breaker: "closed",
    reopens_in_s: 0,
    trips: 0,
    paused_s: 0,
    quota_paused_s: 0,
    ...state,
  };
}

function snapshot(pods: PodSnapshot[]): Snapshot {
  return {
    enabled: true,
    generated_at: "2025-01-01T00:00:00.000Z",
    replica: "test:1",
    lanes: [],
    pods,
    groups: [],
    keys: [],
    accounts: [],
  };
}

const tripped = { breaker: "open", reopens_in_s: 12, trips: 1 } as const;
const paused = { quota_paused_s: 30, paused_s: 30 } as const;

describe("readiness", () => {
  test("ready with a dead pod beside a live one, which it lists", () => {
    const r = readiness(snapshot([pod("a", ["m"], tripped), pod("b", ["m"])]), [{ name: "m" }], false);
    assert.deepEqual(r, {
      ready: true,
      draining: false,
      store: "memory",
      lanes_down: [],
      open_pods: [{ pod: "a", lanes: ["m"], breaker: "open", reopens_in_s: 12, trips: 1 }],
      paused_pods: [],
    });
  });

  test("not ready while the fleet store is down under on_store_error: closed; ready under local", () => {
    const base = snapshot([pod("b", ["m"])]);
    const closed = readiness(
      { ...base, store: { description: "redis://r", mode: "closed" } },
      [{ name: "m" }],
      false,
    );
    assert.deepEqual([closed.ready, closed.store], [false, "closed"]);
    const local = readiness(
      { ...base, store: { description: "redis://r", mode: "local" } },
      [{ name: "m" }],
      false,
    );
    assert.deepEqual([local.ready, local.store], [true, "local"]);
  });

  test("not ready when one lane has every pod tripped or quota-paused, whatever the other lanes", () => {
    const lanes: LaneRoute[] = [{ name: "m" }, { name: "other" }];
    const r = readiness(
      snapshot([pod("a", ["m"], tripped), pod("b", ["m"], paused), pod("c", ["other"])]),
      lanes,
      false,
    );
    assert.equal(r.ready, false);
    assert.deepEqual(r.lanes_down, ["m"]);
    assert.deepEqual(r.paused_pods, [{ pod: "b", lanes: ["m"], quota_paused_s: 30 }]);
  });

  test("a lane whose fallback can serve is not down; one whose fallback is down too is", () => {
    const lanes: LaneRoute[] = [
      { name: "big", fallback: "small" },
      { name: "huge", fallback: "big" },
      { name: "small" },
    ];
    const up = readiness(snapshot([pod("a", ["big", "huge"], tripped), pod("b", ["small"])]), lanes, false);
    assert.deepEqual(up.lanes_down, ["huge"], "one hop, as calls are routed: huge falls back to big, down");
    const down = readiness(
      snapshot([pod("a", ["big", "huge"], tripped), pod("b", ["small"], tripped)]),
      lanes,
      false,
    );
    assert.deepEqual(down.lanes_down, ["big", "huge", "small"]);
  });

  test("a pod whose cooldown is over (its probe is due) or half-open is listed but not out", () => {
    const r = readiness(
      snapshot([
        pod("a", ["m"], { breaker: "open", reopens_in_s: 0, trips: 2 }),
        pod("b", ["n"], { breaker: "half_open", trips: 1 }),
      ]),
      [{ name: "m" }, { name: "n" }],
      false,
    );
    assert.equal(r.ready, true);
    assert.deepEqual(
      r.open_pods.map((p) => [p.pod, p.breaker]),
      [
        ["a", "open"],
        ["b", "half_open"],
      ],
    );
  });

  test("a floor-held pod's short rest is not a quota pause; a lane without pods is never down", () => {
    const r = readiness(
      snapshot([pod("a", ["m"], { paused_s: 0.2 })]),
      [{ name: "m" }, { name: "pass" }],
      false,
    );
    assert.equal(r.ready, true);
    assert.deepEqual(r.paused_pods, []);
  });

  test("draining is never ready", () => {
    const r = readiness(snapshot([pod("a", ["m"])]), [{ name: "m" }], true);
    assert.deepEqual([r.ready, r.draining], [false, true]);
  });
});
