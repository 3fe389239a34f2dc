/**
 * The admission bound across every lane (`options.admission`): in flight across lanes on every
 * path, admitted requests counted from before their body is read, and a refusal whose
 * Retry-After comes from the measured drain rate.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { flush } from "../../test/helpers/index.js";
import { ManualClock } from "../core/clock.js";
import { ConfigError, QueueFullError } from "../core/errors.js";
import { Governor } from "./governor.js";

function make(maxInflight = 2, maxQueued = 1) {
  const clock = new ManualClock(0);
  const gov = new Governor({
    clock,
    admission: { maxInflight, maxQueued },
    lanes: { a: { limit: 5, reserve: 0 }, b: { limit: 5, reserve: 0 } },
  });
  return { clock, gov };
}

describe("the admission bound", () => {
  test("without one, nothing is refused or counted", () => {
    const gov = new Governor({ lanes: { a: { limit: 1 } } });
    gov.enter();
    assert.equal(gov.admissionRefusal(), undefined);
    assert.equal(gov.admitted, 0);
    assert.equal(gov.snapshot().admission, undefined);
  });

  test("in flight across lanes: a call waits for the bound even when its own lane has room", async () => {
    const { gov } = make(2, 10);
    const first = await gov.acquire("a");
    const second = await gov.acquire("b");
    let third: unknown;
    void gov.acquire("a").then((l) => {
      third = l;
    });
    await flush();
    assert.equal(third, undefined, "waits: 2 in flight across lanes");
    assert.deepEqual(gov.snapshot().groups[0], { group: "gateway", limit: 2, inflight: 2 });
    second.release();
    await flush();
    assert.ok(third !== undefined, "granted when a slot of the bound frees");
    first.release();
  });

  test("admitted past in flight + queued: the next request is refused with the bound's numbers, nothing counted", async () => {
    const { gov } = make(2, 1);
    for (let i = 0; i < 3; i++) {
      assert.equal(gov.admissionRefusal(), undefined);
      gov.enter();
    }
    const held = await gov.acquire("a");
    const refusal = gov.admissionRefusal();
    assert.ok(refusal instanceof QueueFullError);
    assert.deepEqual(
      [
        refusal.lane,
        refusal.inflight,
        refusal.queued,
        refusal.queueLimit,
        refusal.width,
        refusal.retryAfterMs,
      ],
      ["gateway", 1, 2, 1, 2, 1000],
    );
    assert.equal(gov.admitted, 3, "the refusal counted nothing");
    assert.deepEqual(gov.snapshot().admission, { inflight: 1, max_inflight: 2, admitted: 3, max_queued: 1 });
    held.release();
  });

  test("its Retry-After comes from the drain rate (Little's law over every lane), not a constant", async () => {
    const { gov, clock } = make(2, 2);
    for (let i = 0; i < 6; i++) {
      const lease = await gov.acquire(i % 2 === 0 ? "a" : "b");
      clock.advance(3_000);
      lease.release();
    }
    for (let i = 0; i < 4; i++) gov.enter();
    // A newcomer waits for 2 admitted beyond the 2 slots, plus itself: 3 × 3 s ÷ 2 slots.
    const refusal = gov.admissionRefusal() as QueueFullError;
    assert.equal(refusal.retryAfterMs, 4_500);
  });

  test("leave() gives back what enter() took, and whenIdle() resolves when the last one leaves", async () => {
    const { gov } = make(2, 1);
    gov.enter();
    gov.enter();
    let idle = false;
    void gov.whenIdle().then(() => {
      idle = true;
    });
    gov.leave();
    await flush();
    assert.equal(idle, false);
    gov.leave();
    await flush();
    assert.equal(idle, true);
    gov.leave();
    assert.equal(gov.admitted, 0, "an extra leave() never goes below zero");
    await gov.whenIdle();
  });

  test("invalid bounds are refused at construction, naming the option", () => {
    assert.throws(
      () => new Governor({ admission: { maxInflight: 0, maxQueued: 0 } }),
      (e: unknown) => e instanceof ConfigError && e.path === "admission.maxInflight",
    );
    assert.throws(
      () => new Governor({ admission: { maxInflight: 2, maxQueued: -1 } }),
      (e: unknown) => e instanceof ConfigError && e.path === "admission.maxQueued",
    );
  });
});
