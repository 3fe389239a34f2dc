/**
 * Seed 004's autoscaler, the decision alone: a look adds a replica when the requests that ended
 * since the last look took longer than the target on average (retries and their waits included,
 * failed ones too), or when none ended while some are open.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { lookWindow, shouldScaleOut } from "../../src/load/autoscaler.js";
import type { RequestRecord } from "../../src/load/stats.js";

const req = (startMs: number, endMs: number, code = "ok"): RequestRecord => ({
  group: 0,
  startMs,
  endMs,
  attempts: 1,
  code,
});

describe("autoscaler", () => {
  test("the window holds the requests that ended since the last look, failed ones too", () => {
    const requests = [req(0, 100), req(50, 250, "quota_paused"), req(200, 400), req(300, 700)];
    assert.deepEqual(lookWindow(requests, 100, 400, 3), { ended: 2, meanMs: 200, open: 3 });
    assert.deepEqual(lookWindow(requests, 700, 900, 5), { ended: 0, meanMs: null, open: 5 });
  });

  test("scale out above the latency target, or when nothing ends while work is open", () => {
    assert.equal(shouldScaleOut({ ended: 2, meanMs: 250, open: 0 }, 200), true);
    assert.equal(shouldScaleOut({ ended: 2, meanMs: 150, open: 9 }, 200), false);
    assert.equal(shouldScaleOut({ ended: 0, meanMs: null, open: 4 }, 200), true);
    assert.equal(shouldScaleOut({ ended: 0, meanMs: null, open: 0 }, 200), false);
  });
});
