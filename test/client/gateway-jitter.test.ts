/**
 * The gateway's half of spreading retries (issue 12): every refusal's Retry-After is the computed
 * value (the floor, DESIGN §3.2) plus up to 20 % jitter, so a burst refused at once is not told
 * one number. The jitter's source is injected (`setRetryAfterJitter`), so these are exact.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { jitteredRetryAfterMs, RETRY_AFTER_JITTER, setRetryAfterJitter } from "../../src/gateway/refusal.js";
import { Mulberry32 } from "../../src/sim/random.js";
import {
  assertRefusal,
  chat,
  held,
  model,
  type Stack,
  SUITE,
  startStack,
  waitFor,
} from "../gateway/helpers.js";

describe("jitteredRetryAfterMs", () => {
  test("adds up to 20 % of the computed value and never goes below it", () => {
    assert.equal(RETRY_AFTER_JITTER, 0.2);
    assert.equal(
      jitteredRetryAfterMs(1000, () => 0),
      1000,
    );
    assert.equal(
      jitteredRetryAfterMs(1000, () => 0.5),
      1100,
    );
    assert.equal(
      jitteredRetryAfterMs(1000, () => 0.999_999),
      1200,
    );
    assert.equal(
      jitteredRetryAfterMs(4321, () => 0.25),
      Math.ceil(4321 * 1.05),
    );
    // A source outside [0, 1) is clamped, so a broken one can neither lower nor explode the value.
    assert.equal(
      jitteredRetryAfterMs(1000, () => -3),
      1000,
    );
    assert.equal(
      jitteredRetryAfterMs(1000, () => 7),
      1200,
    );
  });
});

describe("refusals in one burst carry different Retry-After values, none below the floor", SUITE, () => {
  let stack: Stack;
  let restore: () => number;
  const hold = new AbortController();

  before(async () => {
    restore = setRetryAfterJitter(() => 0);
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: 60_000 }],
      // One slot, no queue: every call past the first is refused queue_full at once.
      config: ([pod]) => ({ models: [model("m", [pod!])] }),
    });
  });
  after(async () => {
    setRetryAfterJitter(restore);
    hold.abort();
    await stack.close();
  });

  test("with the jitter at 0 every refusal says the computed 1 s; seeded, they spread over 1–1.2 s", async () => {
    const holding = held(stack.url, "m", hold.signal);
    await waitFor("the slot to be taken", () => stack.gateway.governor.snapshot().lanes[0]!.inflight === 1);
    // Nothing has ended yet, so there is no drain-rate measurement: the computed value is the 1 s minimum.
    const flat = await Promise.all(Array.from({ length: 10 }, () => chat(stack.url, "m")));
    for (const a of flat) assertRefusal(a, 429, "queue_full");
    assert.deepEqual(new Set(flat.map((a) => a.headers["retry-after-ms"])), new Set(["1000"]));

    const seeded = new Mulberry32(7);
    setRetryAfterJitter(() => seeded.next());
    const spread = await Promise.all(Array.from({ length: 40 }, () => chat(stack.url, "m")));
    const ms = spread.map((a) => {
      assertRefusal(a, 429, "queue_full"); // the body's retry_after_ms is the header's, and Retry-After its ceiling
      return Number(a.headers["retry-after-ms"]);
    });
    assert.ok(Math.min(...ms) >= 1000, `none below the floor: ${ms}`);
    assert.ok(Math.max(...ms) <= 1200, `none above floor + 20 %: ${ms}`);
    // 40 draws from a seeded uniform source: far more than a handful of distinct values.
    assert.ok(new Set(ms).size >= 30, `spread, not one wave: ${[...new Set(ms)].length} distinct values`);
    hold.abort();
    await holding;
  });
});
