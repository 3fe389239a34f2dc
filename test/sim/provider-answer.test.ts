/**
 * `expectedProviderAnswer` computes, from the request alone, the exact bytes the provider
 * simulator sends: `sluice load provider-tokens` checks every answer against it, so it is
 * compared here with what a live provider wrote, for each shape of answer and option it varies by.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type Provider, type ProviderOptions, startProvider } from "../../src/sim/provider.js";
import { expectedProviderAnswer, readProviderCall } from "../../src/sim/provider-answer.js";
import { post } from "./helpers.js";

type Case = [name: string, kind: "chat" | "completion" | "embedding", path: string, body: string];

const CASES: Case[] = [
  [
    "a buffered chat cut to 60 % of max_tokens",
    "chat",
    "/v1/chat/completions",
    '{"model":"m","messages":[{"role":"user","content":"classify this ticket"}],"max_tokens":10}',
  ],
  ["a chat naming no max_tokens", "chat", "/v1/chat/completions", '{"messages":[{"content":"x"}]}'],
  [
    "a streamed chat (no usage chunk unless asked)",
    "chat",
    "/v1/chat/completions",
    '{"model":"q","stream":true,"messages":[{"role":"user","content":"stream me"}],"max_tokens":5}',
  ],
  [
    "a streamed chat with include_usage",
    "chat",
    "/v1/chat/completions",
    '{"model":"q","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"u"}]}',
  ],
  ["a streamed completion", "completion", "/v1/completions", '{"model":"c","prompt":"p","stream":true}'],
  ["embeddings", "embedding", "/v1/embeddings", '{"model":"e","input":["one","two"]}'],
];

for (const options of [
  { defaultOutputTokens: 7, completionRatio: 0.6 },
  { defaultOutputTokens: 3, streamUsage: "always", model: "acct-model" },
] satisfies ProviderOptions[]) {
  describe(`expectedProviderAnswer, provider options ${JSON.stringify(options)}`, () => {
    let provider: Provider;
    before(async () => {
      provider = await startProvider(options);
    });
    after(() => provider.close());

    for (const [name, kind, path, body] of CASES) {
      test(`matches the provider's bytes for ${name}`, async () => {
        const res = await post(provider.url, path, body);
        assert.equal(res.status, 200);
        assert.equal(res.text, expectedProviderAnswer(kind, body, options));
      });
    }
  });
}

describe("readProviderCall", () => {
  test("charges the tokenizer's prompt count plus ceil(max_tokens × completionRatio)", () => {
    // "hello world " ×48 is 96 tokens with o200k_base, + 4 for the message (test/sim/provider.test.ts).
    const body = JSON.stringify({
      messages: [{ role: "user", content: "hello world ".repeat(48).trim() }],
      max_tokens: 300,
    });
    const call = readProviderCall("chat", Buffer.from(body), { completionRatio: 0.5 });
    assert.deepEqual([call.request.promptTokens, call.outputTokens, call.charge], [100, 150, 250]);
  });

  test("a different prompt gets different bytes", () => {
    const a = expectedProviderAnswer("chat", '{"messages":[{"content":"x"}]}', {});
    assert.notEqual(a, expectedProviderAnswer("chat", '{"messages":[{"content":"y"}]}', {}));
  });
});
