/**
 * A pod's own running count bounds what sluice sends it (issue 22 defect 4): calls no gateway
 * counts — here a client going straight to the pod — keep their slots until the pod's
 * `vllm:num_requests_running` (its `metrics_url`, polled every 500 ms) shows them ending. One
 * gateway, memory store, a simulated pod of 6 counting what it runs.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertNothingLeft, chat, type Stack, SUITE, startStack, waitFor } from "./helpers.js";

const WIDTH = 6;
/** The sim serves 100 ms plus 10 ms per output token: `max_tokens` sets each call's length. */
const DIRECT_TOKENS = 200; // 2.1 s
const GATEWAY_TOKENS = 20; // 0.3 s

describe("a pod that reports its running count", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [
        {
          maxNumSeqs: 64,
          serviceMs: 100,
          msPerOutputToken: 10,
          defaultOutputTokens: 2000,
          tokensPerSecond: 0,
          jitterSigma: 0,
        },
      ],
      config: ([url]) => ({
        models: [
          {
            name: "m",
            max_concurrent_requests: 32,
            reserve: 0,
            queue_limit: 64,
            adaptive: { metrics_poll_s: 0.5 },
            pods: [{ url, max_inflight: WIDTH, metrics_url: `${url}/metrics` }],
          },
        ],
      }),
    });
  });
  after(() => stack.close());

  test("calls sent straight to the pod keep their slots until its count shows them ending", async () => {
    const sim = stack.sims[0]!;
    const pod = () => stack.gateway.governor.snapshot().pods[0]!;
    const direct = [0, 1, 2].map((i) =>
      chat(sim.url, "m", { content: `direct ${i}`, extra: { max_tokens: DIRECT_TOKENS } }),
    );
    await waitFor("the pod's report of its 3 calls", () => pod().reported_running === 3, 5_000);
    assert.equal(pod().inflight, 0, "the gateway itself counts none of them");
    const through = Array.from({ length: WIDTH }, (_, i) =>
      chat(stack.url, "m", { content: `through ${i}`, extra: { max_tokens: GATEWAY_TOKENS } }),
    );
    const answers = await Promise.all([...direct, ...through]);
    assert.ok(
      answers.every((a) => a.status === 200),
      answers.map((a) => a.status).join(" "),
    );
    const peak = sim.stats().maxRunningSeen;
    assert.ok(peak <= WIDTH, `the pod ran ${peak} at once (width ${WIDTH}; 9 without its report)`);
    await assertNothingLeft(stack);
  });
});
