/**
 * DESIGN §1.3, servers that never refuse: vLLM queues instead of refusing, so sluice reads the
 * pod's own metrics (`metrics_url`, vLLM's names) and treats a waiting queue above `max_waiting`
 * as congestion. Here the simulated pod really runs 2 while sluice was told 8: the pod queues the
 * rest, reports them waiting, and the polled reading narrows the pod's width.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertNothingLeft, chat, type Stack, SUITE, startStack, waitFor } from "./helpers.js";

describe("a pod that queues instead of refusing", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      // vLLM-like: 2 run, the rest wait (no bound, no refusal).
      sims: [{ maxNumSeqs: 2, serviceMs: 40, tokensPerSecond: 0 }],
      config: ([url]) => ({
        models: [
          {
            name: "m",
            max_concurrent_requests: 8,
            reserve: 0,
            queue_limit: 64,
            adaptive: { floor: 2, max_waiting: 1, metrics_poll_s: 0.05 },
            pods: [{ url, max_inflight: 8, metrics_url: `${url}/metrics` }],
          },
        ],
      }),
    });
  });
  after(() => stack.close());

  test("its reported waiting queue cuts the width below the configured ceiling, and calls still succeed", async () => {
    const pod = () => stack.gateway.governor.snapshot().pods[0]!;
    assert.equal(pod().width, 8);
    const calls: Promise<{ status: number }>[] = [];
    await waitFor(
      "a metrics reading to narrow the pod",
      () => {
        // Keep the pod busier than it can run, so it reports waiters.
        if (stack.sims[0]!.stats().waiting + stack.sims[0]!.stats().running < 8)
          calls.push(chat(stack.url, "m", { content: `c${calls.length}` }));
        return pod().width < 8;
      },
      10_000,
    );
    assert.ok(pod().width >= 2 && pod().width < 8, `width ${pod().width}`);
    const answers = await Promise.all(calls);
    assert.ok(answers.every((a) => a.status === 200));
    assert.ok(stack.sims[0]!.stats().maxRunningSeen <= 2);
    await assertNothingLeft(stack);
  });
});
