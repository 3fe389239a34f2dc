/**
 * Provider quota signals (a 429 with `Retry-After` or a rate-limit reset): they pause the pod
 * until the reset, capped at `maxQuotaPauseMs`, and never cut its width. While every pod of a
 * lane is paused, calls are refused at once with `quota_paused` and the pause left as their
 * Retry-After, instead of queueing into a certain timeout (issue 8, defect 1).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "../../src/core/clock.js";
import { isQuotaPausedError, QuotaPausedError } from "../../src/core/errors.js";
import { FLOOR_REST_MS } from "../../src/core/pod.js";
import { Governor } from "../../src/governor/governor.js";
import { flush } from "../helpers/index.js";
import { acquireNow, LANE, pods, rig, watch } from "./helpers.js";

describe("quota signals", () => {
  test("a 429 with retryAfterMs pauses the pod until the reset and does not cut its width", async () => {
    const r = rig({ limit: 16, reserve: 0, pods: pods(2, 16) });
    const leases = await acquireNow(r.gov, 10);
    const paused = leases[0]!.pod!;
    leases[0]!.failed({ status: 429, retryAfterMs: 2_000 });
    const p = r.pod(paused);
    assert.deepEqual([p.width, p.breaker, p.paused_s], [16, "closed", 2]);
    for (const lease of leases) lease.release();
    r.clock.advance(1_999);
    const during = await acquireNow(r.gov, 16);
    assert.ok(
      during.every((l) => l.pod !== paused),
      "paused: nothing dispatched to it before the reset",
    );
    for (const lease of during) lease.release();
    r.clock.advance(1);
    const after = await acquireNow(r.gov, 16);
    assert.ok(
      after.some((l) => l.pod === paused),
      "dispatched again at the reset",
    );
  });

  test("a 429 with a Retry-After header pauses the pod the same way", async () => {
    const r = rig({ limit: 16, pods: pods(1, 16) });
    const [lease] = await acquireNow(r.gov, 1);
    lease!.failed({ status: 429, headers: { "retry-after": "3" } });
    assert.equal(r.pod("p0").paused_s, 3);
    assert.equal(r.pod("p0").width, 16);
  });

  test("while one pod is paused for quota, calls go to the others", async () => {
    const r = rig({ limit: 32, pods: pods(2, 16) });
    const [lease] = await acquireNow(r.gov, 1);
    const paused = lease!.pod!;
    lease!.failed({ status: 429, retryAfterMs: 5_000 });
    const next = await acquireNow(r.gov, 10);
    assert.ok(next.every((l) => l.pod !== paused));
  });

  test("a pause is capped: Retry-After 99999999 s pauses the pod for 60 s by default, not three years", async () => {
    const r = rig({ limit: 4, pods: pods(1, 4) });
    const [lease] = await acquireNow(r.gov, 1);
    lease!.failed({ status: 429, headers: { "retry-after": "99999999" } });
    assert.deepEqual([r.pod("p0").paused_s, r.pod("p0").quota_paused_s], [60, 60]);
    r.clock.advance(60_000);
    assert.equal((await acquireNow(r.gov, 1)).length, 1, "the pod serves again after the cap");
  });

  test("while every pod of a lane is paused, a call is refused at once with quota_paused and the pause left", async () => {
    const r = rig({ limit: 8, pods: pods(2, 4) });
    const [a, b] = await acquireNow(r.gov, 2);
    a!.failed({ status: 429, retryAfterMs: 7_000 });
    b!.failed({ status: 429, retryAfterMs: 9_000 });
    r.clock.advance(2_000);
    const refused = watch(r.gov.acquire(LANE));
    await flush();
    assert.ok(refused.error instanceof QuotaPausedError && isQuotaPausedError(refused.error));
    assert.deepEqual(
      [refused.error.code, refused.error.httpStatus, refused.error.retryAfterMs, refused.error.pods],
      ["quota_paused", 429, 5_000, 2],
    );
    assert.ok(r.gov.check(LANE) instanceof QuotaPausedError, "the pre-body check says the same");
    assert.equal(r.gov.tryAcquire(LANE), undefined);
    const lane = r.gov.snapshot().lanes[0]!;
    assert.deepEqual(
      [lane.inflight, lane.queued, lane.paused_s],
      [0, 0, 5],
      "nothing counted, nothing queued; the snapshot says paused",
    );
    r.clock.advance(5_000);
    assert.equal((await acquireNow(r.gov, 1)).length, 1, "served again when the first pause ends");
  });

  test("a lane whose pods are all paused sends its calls to its fallback", async () => {
    const clock = new ManualClock(0);
    const gov = new Governor({
      clock,
      random: () => 0.5,
      lanes: {
        big: { limit: 4, pods: [{ id: "big-pod", maxInflight: 4 }], fallback: "small" },
        small: { limit: 4, pods: [{ id: "small-pod", maxInflight: 4 }] },
      },
    });
    const first = await gov.acquire("big");
    first.failed({ status: 429, retryAfterMs: 10_000 });
    const next = await gov.acquire("big");
    assert.deepEqual([next.lane, next.pod], ["small", "small-pod"]);
    next.release();
  });

  test("a floor-held pod's short rest after a refusal is not a quota pause", async () => {
    const r = rig({
      limit: 32,
      reserve: 0,
      pods: pods(2, 16),
      adaptive: false,
      breaker: { baseCooldownMs: 60_000, maxCooldownMs: 60_000 },
    });
    // Both refuse: one opens (the half rule allows one of two), the other is held closed and rests.
    for (const lease of await acquireNow(r.gov, 2)) lease.failed({ status: 503 });
    const held = r.gov.snapshot().pods.find((p) => p.breaker === "closed")!;
    assert.ok(held.paused_s > 0, "resting");
    assert.equal(held.quota_paused_s, 0, "its rest is not shown as a quota pause");
    assert.equal(r.gov.tryAcquire(LANE), undefined, "but it rests: nothing is dispatched to it for a moment");
    r.clock.advance(FLOOR_REST_MS);
    assert.ok(r.gov.tryAcquire(LANE) !== undefined, "and serves again after the rest");
    assert.equal(r.gov.check(LANE), undefined, "no quota refusal for a rest");
  });
});
