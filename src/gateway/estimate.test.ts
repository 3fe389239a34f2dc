import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { estimateTokens, inputOnly, promptTokens, TOKENIZED_CHARS, textTokens } from "./estimate.js";
import { rateLimitHeaders } from "./rate-headers.js";
import { generatedChars, settledUsage, UsageTap } from "./usage.js";

describe("the token estimate (estimate.ts)", () => {
  test("chat messages: the tokenizer over their text, plus 4 per message; parts of a list count their text", () => {
    const body = {
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: [{ type: "text", text: "hello world" }, { type: "image_url" }] },
      ],
    };
    assert.equal(promptTokens(body, 999), textTokens("You are terse.hello world") + 8);
    assert.equal(textTokens("hello world ".repeat(48).trim()), 96, "o200k_base, not characters ÷ 4 (143)");
  });

  test("completion prompts and embedding inputs: strings, lists, token ids as they are; other bodies ÷ 4", () => {
    assert.equal(promptTokens({ prompt: "hello world" }, 0), 2);
    assert.equal(promptTokens({ prompt: ["hello", "world"] }, 0), 2);
    assert.equal(promptTokens({ input: [101, 102, 103] }, 0), 3);
    assert.equal(promptTokens({ something: "else" }, 400), 100);
  });

  test("text past the tokenized bound counts characters ÷ 4, so a huge body costs bounded time", () => {
    const long = "a".repeat(TOKENIZED_CHARS + 4000);
    assert.equal(textTokens(long), textTokens("a".repeat(TOKENIZED_CHARS)) + 1000);
  });

  test("the estimate: prompt + max_tokens, else the model's default; embeddings their input only", () => {
    assert.equal(estimateTokens(100, 50, 4096, false), 150);
    assert.equal(
      estimateTokens(100, undefined, 4096, false),
      4196,
      "leaving max_tokens out cannot dodge the budget",
    );
    assert.equal(estimateTokens(100, 0, 4096, false), 100);
    assert.equal(estimateTokens(100, undefined, 4096, true), 100);
    assert.ok(
      inputOnly("/v1/embeddings") && inputOnly("/v1/embeddings?x=1") && !inputOnly("/v1/chat/completions"),
    );
  });
});

describe("what a stream streamed (usage.ts)", () => {
  test("counts the characters of content and text strings in SSE chunks, escapes included", () => {
    const chunk =
      'data: {"choices":[{"delta":{"content":"Hel\\"lo"}}]}\n\ndata: {"choices":[{"text":"abc"}]}\n\n';
    assert.equal(generatedChars(chunk), 7 + 3, "the raw string: an escape counts its two characters");
  });

  test("a stream without usage settles with its prompt estimate plus what it streamed; JSON without usage keeps the estimate", () => {
    const sse = new UsageTap(true);
    sse.push(Buffer.from(`data: {"choices":[{"delta":{"content":"${"x".repeat(40)}"}}]}\n\n`));
    assert.deepEqual(settledUsage(undefined, sse, 12), { promptTokens: 12, completionTokens: 10 });
    assert.equal(settledUsage(undefined, new UsageTap(false), 12), undefined);
    assert.deepEqual(settledUsage({ promptTokens: 3, completionTokens: 4 }, sse, 12), {
      promptTokens: 3,
      completionTokens: 4,
    });
  });
});

describe("RateLimit headers (rate-headers.ts)", () => {
  test("an IETF policy and limit per bucket, and OpenAI's headers for the tightest bucket of each unit", () => {
    const h = rateLimitHeaders([
      { scope: "lane", name: "chat", unit: "tokens", perMinute: 400_000, remaining: 390_000, resetMs: 1500 },
      {
        scope: "account",
        name: "prod",
        unit: "tokens",
        perMinute: 2_000_000,
        remaining: 12_000,
        resetMs: 359_000,
      },
      { scope: "account", name: "prod", unit: "requests", perMinute: 5000, remaining: 4990, resetMs: 120 },
    ]);
    assert.equal(
      h["ratelimit-policy"],
      '"lane-tokens";q=400000;w=60, "account-tokens";q=2000000;w=60, "account-requests";q=5000;w=60',
    );
    assert.equal(
      h.ratelimit,
      '"lane-tokens";r=390000;t=2, "account-tokens";r=12000;t=359, "account-requests";r=4990;t=1',
    );
    assert.deepEqual(
      [h["x-ratelimit-limit-tokens"], h["x-ratelimit-remaining-tokens"], h["x-ratelimit-reset-tokens"]],
      ["2000000", "12000", "5m59s"],
    );
    assert.deepEqual(
      [h["x-ratelimit-remaining-requests"], h["x-ratelimit-reset-requests"]],
      ["4990", "120ms"],
    );
    assert.deepEqual(rateLimitHeaders([]), {});
  });
});
