/**
 * The provider simulator's account mode (src/sim/provider.ts): tokens and requests per minute
 * and calls in flight, answered past a limit with 429 and the reset headers providers send;
 * real sockets, the buckets on an injected clock.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { classifyOutcome } from "../../src/core/outcome.js";
import { resetText, startProvider } from "../../src/sim/provider.js";
import { ManualClock } from "../../src/testing.js";
import { flush } from "../helpers/index.js";

const chat = (content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: "gpt-sim", messages: [{ role: "user", content }], ...extra });

async function post(url: string, body: string, path = "/v1/chat/completions") {
  const res = await fetch(url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe("provider simulator: an account's limits", () => {
  test("past its requests per minute: 429 with retry-after and x-ratelimit-reset-requests, then served after the refill", async () => {
    const clock = new ManualClock();
    const p = await startProvider({ rpm: 2, now: () => clock.now() });
    try {
      assert.equal((await post(p.url, chat("hi"))).status, 200);
      const ok = await post(p.url, chat("hi"));
      assert.equal(ok.headers.get("x-ratelimit-remaining-requests"), "0");
      const no = await post(p.url, chat("hi"));
      assert.equal(no.status, 429);
      assert.equal(no.headers.get("retry-after"), "30");
      assert.equal(no.headers.get("retry-after-ms"), "30000");
      assert.equal(no.headers.get("x-ratelimit-reset-requests"), "1m0s");
      assert.deepEqual(classifyOutcome({ status: 429, headers: no.headers }), {
        kind: "quota",
        resetMs: 30_000,
      });
      clock.advance(30_000);
      assert.equal((await post(p.url, chat("hi"))).status, 200);
      assert.deepEqual([p.stats().served, p.stats().throttled.requests], [3, 1]);
    } finally {
      await p.close();
    }
  });

  test("past its tokens per minute: charged prompt + completion; 429 until this call fits", async () => {
    const clock = new ManualClock();
    const p = await startProvider({ tpm: 600, now: () => clock.now() });
    try {
      // "hello world " ×48 is 96 tokens with o200k_base, + 4 for the message, + 300 completion: 400.
      const big = chat("hello world ".repeat(48).trim(), { max_tokens: 300 });
      const first = await post(p.url, big);
      assert.equal(first.status, 200);
      assert.equal(JSON.parse(first.text).usage.total_tokens, 400);
      assert.equal(first.headers.get("x-ratelimit-remaining-tokens"), "200");
      const no = await post(p.url, big);
      assert.equal(no.status, 429);
      assert.equal(no.headers.get("retry-after-ms"), "20000", "200 more tokens at 10 per second");
      assert.equal(no.headers.get("x-ratelimit-reset-tokens"), "40s");
      clock.advance(20_000);
      assert.equal((await post(p.url, big)).status, 200);
      assert.equal(p.stats().tokensServed, 800);
    } finally {
      await p.close();
    }
  });

  test("past its calls in flight: 429 with retry-after 1", async () => {
    const p = await startProvider({ maxInflight: 1, serviceMs: 60_000 });
    try {
      const slow = post(p.url, chat("a")).catch(() => undefined); // cut by close()
      while (p.stats().served === 0) await flush();
      const no = await post(p.url, chat("b"));
      assert.equal(no.status, 429);
      assert.equal(no.headers.get("retry-after"), "1");
      assert.deepEqual([p.stats().throttled.inflight, p.stats().maxInflightSeen], [1, 1]);
      void slow;
    } finally {
      await p.close();
    }
  });

  test("a max_tokens above the model's completion limit is answered 400, as OpenAI's is (not generated)", async () => {
    const p = await startProvider({ maxOutputTokens: 4096 });
    try {
      const absurd = await post(p.url, chat("hello", { max_tokens: 1_000_000_000 }));
      assert.equal(absurd.status, 400);
      assert.match(
        absurd.text,
        /max_tokens is too large: 1000000000\. This model supports at most 4096 completion tokens/,
      );
      assert.equal((await post(p.url, chat("hello", { max_tokens: 4096 }))).status, 200);
      assert.equal(p.stats().served, 1);
    } finally {
      await p.close();
    }
  });

  test("a stream carries usage only when asked (as OpenAI's), or always / never by option", async () => {
    const p = await startProvider({ completionRatio: 0.5 });
    const always = await startProvider({ streamUsage: "always" });
    try {
      const plain = await post(p.url, chat("hello", { stream: true, max_tokens: 10 }));
      assert.ok(!plain.text.includes('"usage":{'));
      assert.ok(plain.text.endsWith("data: [DONE]\n\n"));
      const asked = await post(
        p.url,
        chat("hello", { stream: true, max_tokens: 10, stream_options: { include_usage: true } }),
      );
      assert.match(asked.text, /"usage":\{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10\}/);
      assert.match((await post(always.url, chat("hello", { stream: true }))).text, /"usage":\{/);
    } finally {
      await p.close();
      await always.close();
    }
  });

  test("resets are written as OpenAI writes them", () => {
    assert.deepEqual(
      [resetText(20), resetText(1500), resetText(60_000), resetText(361_000)],
      ["20ms", "1.5s", "1m0s", "6m1s"],
    );
  });
});
