/** The Retry-After floor, applied in one place, and the drain-rate estimate it bounds. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { HoldTime, MIN_RETRY_AFTER_MS, retryAfterFloor, retryAfterMs } from "./retry-after.js";

test("the floor: whole ms, never below 1 s", () => {
  assert.equal(MIN_RETRY_AFTER_MS, 1000);
  for (const [ms, floored] of [
    [-5, 1000],
    [0, 1000],
    [999.5, 1000],
    [1000, 1000],
    [1000.2, 1001],
    [2500, 2500],
  ] as const) {
    assert.equal(retryAfterFloor(ms), floored, `${ms} ms`);
  }
});

test("Retry-After from the drain rate: the floor before any lease ended, position × hold ÷ width after", () => {
  const hold = new HoldTime();
  assert.equal(retryAfterMs(10, 4, hold), 1000);
  hold.record(2000);
  assert.equal(retryAfterMs(10, 4, hold), 5000);
  assert.equal(retryAfterMs(1, 4, hold), 1000, "500 ms expected: the floor");
  assert.equal(retryAfterMs(3, 0, hold), 1000, "no width: unmeasured, the floor");
});
