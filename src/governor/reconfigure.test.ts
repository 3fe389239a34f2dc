/**
 * `Governor.reconfigure`: a config reload applies to live lanes without dropping a call. Calls in
 * flight keep their slots and are released into the new limits; waiters keep their place; an
 * invalid configuration changes nothing.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { flush } from "../../test/helpers/index.js";
import { ManualClock } from "../core/clock.js";
import { ConfigError } from "../core/errors.js";
import type { Lease } from "../core/lease.js";
import type { GovernorOptions } from "../core/options.js";
import { Governor } from "./governor.js";

function watch(p: Promise<Lease>): { lease?: Lease; error?: unknown } {
  const w: { lease?: Lease; error?: unknown } = {};
  p.then(
    (l) => {
      w.lease = l;
    },
    (e) => {
      w.error = e;
    },
  );
  return w;
}

const base = (limit: number, extra: Partial<GovernorOptions> = {}): GovernorOptions => ({
  clock: new ManualClock(0),
  lanes: {
    chat: { limit, reserve: 0, queueLimit: 10, pods: [{ id: "p", maxInflight: 8 }], adaptive: false },
  },
  ...extra,
});

describe("Governor.reconfigure", () => {
  test("a lower limit keeps calls in flight and holds new ones until they drain below it", async () => {
    const gov = new Governor(base(4));
    const held = await Promise.all([1, 2, 3].map(() => gov.acquire("chat")));
    gov.reconfigure(base(2));
    const next = watch(gov.acquire("chat"));
    await flush();
    assert.equal(next.lease, undefined, "3 in flight, limit 2: waits");
    assert.deepEqual([gov.snapshot().lanes[0]!.inflight, gov.snapshot().lanes[0]!.limit], [3, 2]);
    held[0]!.release();
    await flush();
    assert.equal(next.lease, undefined, "2 in flight: still at the new limit");
    held[1]!.release();
    await flush();
    assert.ok(next.lease !== undefined, "granted once below the new limit");
    held[2]!.release();
    (next.lease as Lease | undefined)?.release();
    assert.equal(gov.snapshot().lanes[0]!.inflight, 0, "no count lost or doubled");
  });

  test("a higher limit grants waiters at once, in their order", async () => {
    const gov = new Governor(base(1));
    const first = await gov.acquire("chat");
    const a = watch(gov.acquire("chat", { priority: "bulk" }));
    const b = watch(gov.acquire("chat", { priority: "interactive" }));
    await flush();
    gov.reconfigure(base(2));
    await flush();
    assert.ok(b.lease !== undefined && a.lease === undefined, "the interactive waiter first");
    for (const l of [first, b.lease!]) l.release();
    await flush();
    a.lease!.release();
  });

  test("an invalid configuration is refused with its path and changes nothing", async () => {
    const gov = new Governor(base(3));
    assert.throws(
      () => gov.reconfigure(base(-1)),
      (e: unknown) => e instanceof ConfigError && e.path === "lanes.chat.limit",
    );
    assert.throws(
      () =>
        gov.reconfigure({
          lanes: {
            chat: { limit: 2, pods: [{ id: "p", maxInflight: 8 }] },
            code: { limit: 2, pods: [{ id: "p", maxInflight: 4 }] },
          },
        }),
      (e: unknown) => e instanceof ConfigError && e.path === "lanes.code.pods[0].maxInflight",
      "one URL is one pod: its lanes must agree",
    );
    assert.equal(gov.snapshot().lanes[0]!.limit, 3);
    assert.deepEqual(
      gov.snapshot().lanes.map((l) => l.lane),
      ["chat"],
    );
  });

  test("lanes and pods are added and removed; a removed lane's calls finish and give back their slots", async () => {
    const gov = new Governor(base(2));
    const held = await gov.acquire("chat");
    gov.reconfigure({
      lanes: { code: { limit: 2, pods: [{ id: "q", maxInflight: 2 }] } },
    });
    const snap = gov.snapshot();
    assert.deepEqual([snap.lanes.map((l) => l.lane), snap.pods.map((p) => p.id)], [["code"], ["q"]]);
    const lease = await gov.acquire("code");
    assert.equal(lease.pod, "q");
    held.release(); // ends on the removed lane's objects: nothing negative, nothing left over
    lease.release();
    assert.ok(gov.snapshot().lanes.every((l) => l.inflight === 0));
    // A lane no longer configured is made from the defaults on its next call (pass-through here).
    const again = await gov.acquire("chat");
    assert.equal(again.pod, undefined);
  });

  test("a pod's new ceiling caps its width; its breaker keeps its state", async () => {
    const clock = new ManualClock(0);
    const options = (maxInflight: number): GovernorOptions => ({
      clock,
      random: () => 0.5,
      lanes: {
        chat: {
          limit: 16,
          pods: [
            { id: "p", maxInflight },
            { id: "q", maxInflight: 8 },
          ],
          adaptive: false,
          breaker: { baseCooldownMs: 10_000 },
        },
      },
    });
    const gov = new Governor(options(8));
    const lease = await gov.acquire("chat");
    const tripped = lease.pod!;
    lease.failed({ status: 503 });
    assert.equal(gov.isTripped(tripped), true);
    gov.reconfigure(options(3));
    const p = gov.snapshot().pods.find((x) => x.id === "p")!;
    assert.deepEqual([p.ceiling, p.width], [3, 3]);
    assert.equal(gov.isTripped(tripped), true, "still open after the reload");
  });

  test("keys and the admission bound take their new limits", async () => {
    const gov = new Governor(
      base(4, { keys: { team: { maxInflight: 1 } }, admission: { maxInflight: 4, maxQueued: 0 } }),
    );
    const held = await gov.acquire("chat", { key: "team" });
    assert.equal(gov.check("chat", { key: "team" })?.code, "key_limit");
    gov.reconfigure(
      base(4, { keys: { team: { maxInflight: 2 } }, admission: { maxInflight: 1, maxQueued: 0 } }),
    );
    assert.equal(gov.check("chat", { key: "team" }), undefined, "the key's new bound has room");
    const next = watch(gov.acquire("chat", { key: "team" }));
    await flush();
    assert.equal(next.lease, undefined, "the admission bound is now 1 in flight");
    held.release();
    await flush();
    assert.ok(next.lease !== undefined);
    (next.lease as Lease | undefined)?.release();
  });
});
