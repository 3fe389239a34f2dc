/**
 * `sluice_upstream_ttfb_seconds{lane}`: the time from sending a call to its pod to the first byte
 * of the pod's answer — measured here against a pod that takes a known time before answering.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { call, chat, model, type Stack, SUITE, startStack } from "./helpers.js";

describe("time to first byte", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 4, serviceMs: 120, tokensPerSecond: 0 }],
      config: (urls) => ({ models: [model("slow", [urls[0]!], {}, 4)] }),
    });
  });
  after(() => stack.close());

  test("each answer's time to the pod's first byte is observed per lane", async () => {
    for (let i = 0; i < 3; i++) assert.equal((await chat(stack.url, "slow")).status, 200);
    const text = (await call(stack.url, "/metrics")).text;
    const count = /^sluice_upstream_ttfb_seconds_count\{lane="slow"\} (\d+)/m.exec(text);
    const sum = /^sluice_upstream_ttfb_seconds_sum\{lane="slow"\} ([\d.e-]+)/m.exec(text);
    assert.ok(count && sum, "the histogram is exported with its lane");
    assert.equal(Number(count[1]), 3);
    const mean = Number(sum[1]) / 3;
    assert.ok(mean >= 0.1 && mean < 2, `mean TTFB ≈ the pod's 120 ms, got ${mean} s`);
  });
});
