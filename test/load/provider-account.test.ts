/**
 * What `sluice load` reads from a provider account (src/load/provider-pod.ts): tokens charged and
 * asked minute by minute, as the provider itself logged them — a live provider simulator over
 * real sockets, its buckets on a ManualClock so each call lands in a chosen minute.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { accountStats, startProviderPod } from "../../src/load/provider-pod.js";
import type { ProviderPodSpec } from "../../src/load/types.js";
import { readProviderCall } from "../../src/sim/provider-answer.js";
import { ManualClock } from "../../src/testing.js";

const SPEC: ProviderPodSpec = { kind: "provider", model: "m", account: { tpm: 600, completionRatio: 0.5 } };

/** A chat body of `words` words and `maxTokens`, and what the account charges for it. */
function call(words: number, maxTokens: number): { body: string; charge: number } {
  const body = JSON.stringify({
    model: "m",
    messages: [{ role: "user", content: "word ".repeat(words).trim() }],
    max_tokens: maxTokens,
  });
  return { body, charge: readProviderCall("chat", Buffer.from(body), SPEC.account).charge };
}

async function send(url: string, body: string): Promise<number> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  await res.text();
  return res.status;
}

describe("accountStats: the provider's own counts per minute", () => {
  test("tokens charged and asked by minute from the start, the first minute apart, the sustained rate; calls before the start are not the run's", async () => {
    const clock = new ManualClock(0);
    const provider = await startProviderPod(SPEC, 1, 0, () => clock.now());
    try {
      const small = call(20, 40);
      const big = call(200, 400);
      assert.ok(small.charge < 100 && big.charge > 300, `charges ${small.charge}, ${big.charge}`);
      // Before the run's start (a warm-up): served, but not counted.
      clock.set(500);
      assert.equal(await send(provider.url, small.body), 200);
      clock.set(1_000);
      // Minute 0: the big call fits the full bucket; a second one does not (429, asked not charged).
      assert.equal(await send(provider.url, big.body), 200);
      assert.equal(await send(provider.url, big.body), 429);
      // Minute 1: the bucket has refilled.
      clock.set(61_000 + 30_000);
      assert.equal(await send(provider.url, small.body), 200);
      // Minute 2, after the offering: the drain's minute.
      clock.set(121_000 + 1_000);
      assert.equal(await send(provider.url, small.body), 200);

      const a = accountStats(SPEC, provider, {
        startMs: 1_000,
        minuteMs: 60_000,
        offerMs: 120_000,
      });
      assert.deepEqual(a.tokens_per_minute, [big.charge, small.charge, small.charge]);
      assert.deepEqual(a.tokens_asked_per_minute, [2 * big.charge, small.charge, small.charge]);
      assert.deepEqual(a.throttled, { tokens: 1, requests: 0, inflight: 0 });
      assert.equal(a.first_minute_tokens, big.charge);
      assert.equal(a.peak_minute_tokens, small.charge, "the whole minutes of offering after the first");
      assert.equal(a.mean_minute_tokens, small.charge);
      // Asked while offered (minutes 0 and 1) beyond the full bucket's 600, per minute offered.
      assert.equal(a.sustained_asked_per_minute, Math.round((2 * big.charge + small.charge - 600) / 2));
      assert.equal(a.tpm, 600);
    } finally {
      await provider.close();
    }
  });
});
