/**
 * Seed 002 (D4): "wait time never counts toward request_timeout". A call that waited in sluice's
 * queue longer than `upstream_timeout_s` itself still gets the whole of it at the pod: the
 * timeout bounds the pod's answer, the queue has its own bound (`queue_timeout_s`). Counted at
 * the pod: every call ran there once, and each queued call's wait (X-Sluice-Queue-Ms) was
 * longer than the upstream timeout it then did not hit.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertNothingLeft, chat, model, type Stack, SUITE, startStack } from "./helpers.js";

const UPSTREAM_TIMEOUT_S = 2;
/** Each call's time at the pod: well inside the timeout, but three of them in a row are not. */
const SERVICE_MS = 1200;

describe("queue wait and the upstream timeout", SUITE, () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: SERVICE_MS, tokensPerSecond: 0 }],
      config: ([pod]) => ({
        models: [
          model("m", [pod!], { queue_limit: 4, queue_timeout_s: 30, upstream_timeout_s: UPSTREAM_TIMEOUT_S }),
        ],
      }),
    });
  });
  after(() => stack.close());

  test("a call that waited longer than upstream_timeout_s still gets all of it at the pod", async () => {
    // One slot: the calls run one after another, the last waiting two services (2.4 s) first.
    const answers = await Promise.all([0, 1, 2].map((i) => chat(stack.url, "m", { content: `call ${i}` })));
    for (const a of answers) assert.equal(a.status, 200, a.text);
    const waits = answers.map((a) => Number(a.headers["x-sluice-queue-ms"])).sort((x, y) => x - y);
    assert.ok(
      waits[2]! > UPSTREAM_TIMEOUT_S * 1000,
      `the last call waited ${waits[2]} ms, not past the ${UPSTREAM_TIMEOUT_S} s timeout: the test proves nothing`,
    );
    const pod = stack.sims[0]!.stats();
    assert.equal(pod.completed, 3, "each call ran at the pod exactly once");
    assert.equal(pod.maxRunningSeen, 1);
    await assertNothingLeft(stack);
  });
});
