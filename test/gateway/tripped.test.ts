/**
 * DESIGN §3.2: when every pod of a lane is tripped and there is no fallback, sluice answers
 * 503 `upstream_unavailable` at once (Retry-After = the breaker's remaining cooldown) instead of
 * queueing calls into a timeout; with a `fallback` model the calls go there.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertNothingLeft, assertRefusal, chat, model, type Stack, SUITE, startStack } from "./helpers.js";

describe("a lane whose only pod is dead", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [
        { maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 },
        { maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 },
      ],
      config: (urls) => ({
        models: [
          model(
            "solo",
            [urls[0]!],
            // A queued call would wait out this timeout: far beyond the bound asserted below.
            { queue_timeout_s: 60, breaker: { base_cooldown_s: 30, max_cooldown_s: 30 } },
            2,
          ),
          model("backup", [urls[1]!], {}, 2),
          model(
            "primary",
            [urls[0]!],
            { fallback: "backup", breaker: { base_cooldown_s: 30, max_cooldown_s: 30 } },
            2,
          ),
        ],
      }),
    });
    await stack.sims[0]!.close(); // its port now refuses connections
  });
  after(() => stack.close());

  test("the refusal that trips the breaker ends that call with 502, not a queue wait", async () => {
    const first = await chat(stack.url, "solo");
    assert.equal(first.status, 502, first.text);
    assert.equal(stack.gateway.governor.snapshot().pods.find((p) => p.lane === "solo")!.breaker, "open");
  });

  test("later calls get 503 upstream_unavailable at once, with the cooldown as Retry-After", async () => {
    const started = performance.now();
    const a = await chat(stack.url, "solo");
    // The bound tells "answered at once" from "after the 60 s queue timeout" with room for a
    // loaded machine's slow answer (1 s was a measure of the machine, not of the queue).
    const tookMs = performance.now() - started;
    assert.ok(tookMs < 10_000, `answered after ${tookMs.toFixed(0)} ms, not after a queue timeout`);
    assertRefusal(a, 503, "upstream_unavailable");
    const retryAfter = Number(a.headers["retry-after"]);
    // The cooldown (30 s ± 20 %, the breaker's jitter) is the floor; the gateway adds up to 20 % more.
    assert.ok(
      retryAfter >= 20 && retryAfter <= 44,
      `Retry-After ${retryAfter} s ≈ the 30 s cooldown ± 20 % + jitter`,
    );
  });

  test("a lane with a fallback sends its calls there once its pods are tripped", async () => {
    // One URL is one pod: "primary" lists the pod "solo" tripped above, so it is open for both
    // lanes (listed once in the snapshot) and primary's calls go to the fallback at once.
    const shared = stack.gateway.governor.snapshot().pods.filter((p) => p.id === stack.sims[0]!.url);
    assert.deepEqual(
      shared.map((p) => [p.lanes, p.breaker]),
      [[["solo", "primary"], "open"]],
    );
    const a = await chat(stack.url, "primary");
    assert.equal(a.status, 200, a.text);
    assert.equal(a.headers["x-sluice-lane"], "backup");
    assert.equal(stack.sims[1]!.stats().completed, 1);
    await assertNothingLeft(stack);
  });
});
