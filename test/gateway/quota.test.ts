/**
 * A provider's quota answer (429 with Retry-After) pauses its pod; while every pod of a lane is
 * paused the gateway answers 429 `quota_paused` at once, and its Retry-After is the pause left,
 * not the 1 s floor — before the body (lane named in a header) and after it alike.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertNothingLeft, assertRefusal, chat, model, type Stack, SUITE, startStack } from "./helpers.js";
import { answerStatus, startRawPod } from "./raw-pod.js";

/** A provider over its quota: every call is 429 with `Retry-After: 30`. */
const overQuotaProvider = () => startRawPod(answerStatus(429, { "retry-after": "30" }));

describe("a lane whose only pod is paused by a provider quota", SUITE, () => {
  let provider: Awaited<ReturnType<typeof overQuotaProvider>>;
  let stack: Stack;

  before(async () => {
    provider = await overQuotaProvider();
    stack = await startStack({ sims: [], config: () => ({ models: [model("m", [provider.url], {}, 2)] }) });
  });
  after(async () => {
    await stack.close();
    await provider.close();
  });

  test("the provider's own 429 is passed through and pauses the pod", async () => {
    const a = await chat(stack.url, "m");
    assert.equal(a.status, 429);
    assert.equal(a.headers["retry-after"], "30");
    assert.equal(provider.calls.length, 1);
  });

  test("later calls get 429 quota_paused with the pause left as Retry-After, and never reach the provider", async () => {
    for (const headers of [{}, { "x-sluice-model": "m" }] as Record<string, string>[]) {
      const a = await chat(stack.url, "m", { headers });
      assertRefusal(a, 429, "quota_paused");
      const retryAfter = Number(a.headers["retry-after"]);
      // The pause left (≤ 30 s) is the floor; the gateway adds up to 20 % jitter (refusal.ts).
      assert.ok(retryAfter > 20 && retryAfter <= 36, `Retry-After ${retryAfter} s ≈ the 30 s left + jitter`);
    }
    assert.equal(provider.calls.length, 1);
    await assertNothingLeft(stack);
  });
});
