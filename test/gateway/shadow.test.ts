/**
 * Shadow mode (`admission.mode: shadow`): how an operator rolls sluice out in front of a live
 * fleet. Nothing is refused or held back; what enforce mode would have refused is counted in
 * `sluice_would_refuse_total` instead.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertNothingLeft, call, chat, model, type Stack, SUITE, startStack } from "./helpers.js";

const CALLS = 6;

/** The value of one Prometheus sample, summed over every label set matching `labels`. */
function sample(text: string, name: string, labels = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!line.includes(labels)) continue;
    sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

describe("shadow mode", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      // The pod can run every call at once; sluice is told it takes one, with no queue.
      sims: [{ maxNumSeqs: CALLS, serviceMs: 40, tokensPerSecond: 0 }],
      config: ([pod]) => ({
        admission: { mode: "shadow" },
        models: [model("m", [pod!])],
      }),
    });
  });
  after(() => stack.close());

  test("lets every over-capacity call through and counts what it would have refused", async () => {
    const before = sample((await call(stack.url, "/metrics")).text, "sluice_would_refuse_total");
    const answers = await Promise.all(
      Array.from({ length: CALLS }, (_, i) => chat(stack.url, "m", { content: `call ${i}` })),
    );
    for (const a of answers) assert.equal(a.status, 200, a.text);
    assert.equal(stack.sims[0]!.stats().completed, CALLS);
    const text = (await call(stack.url, "/metrics")).text;
    const after = sample(text, "sluice_would_refuse_total");
    assert.ok(after - before > 0, `sluice_would_refuse_total went from ${before} to ${after}`);
    assert.ok(sample(text, "sluice_would_refuse_total", 'reason="queue_full"') > 0);
    // Nothing was actually refused.
    assert.equal(sample(text, "sluice_refusals_total", 'reason="queue_full"'), 0);
    await assertNothingLeft(stack);
  });

  // The gateway's undici Pool per pod has `connections: max_inflight`, so a call let through in
  // shadow mode queues inside undici, unbounded and without a timeout, behind the pod's
  // max_inflight: shadow mode is not "refuse nothing, hold nothing back".
  test("over-capacity calls run at once upstream instead of waiting in the pod's connection pool", async () => {
    stack.sims[0]!.resetStats();
    const answers = await Promise.all(
      Array.from({ length: CALLS }, (_, i) => chat(stack.url, "m", { content: `at once ${i}` })),
    );
    for (const a of answers) assert.equal(a.status, 200, a.text);
    assert.ok(stack.sims[0]!.stats().maxRunningSeen > 1, "calls beyond max_inflight ran at once");
    await assertNothingLeft(stack);
  });

  test("a call the lane has room for is carried normally", async () => {
    const a = await chat(stack.url, "m");
    assert.equal(a.status, 200);
    assert.equal(a.headers["x-sluice-lane"], "m");
    await assertNothingLeft(stack);
  });
});
