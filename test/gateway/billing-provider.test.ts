/**
 * The billing provider (billing-provider.ts) is only as good a witness as it is faithful: read
 * with the official `openai` SDK, its streams and bodies must be what OpenAI's are — tool-call
 * argument deltas that assemble into JSON, `reasoning_content` deltas, a usage chunk exactly when
 * `stream_options.include_usage` asked for one, JSON answers past 16 KiB with `logprobs` — and the
 * usage it reports must be what its ledger billed. Its billing rule (billing-wire.ts) is checked on
 * images by OpenAI's published examples, and a caller that leaves mid-stream is billed less than
 * the whole answer.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import OpenAI from "openai";
import { request } from "undici";
import { type BillingProvider, startBillingProvider } from "./billing-provider.js";
import { imageTokens } from "./billing-wire.js";
import { waitFor } from "./helpers.js";

let provider: BillingProvider;
let client: OpenAI;
before(async () => {
  provider = await startBillingProvider();
  client = new OpenAI({ baseURL: `${provider.url}/v1`, apiKey: "test", maxRetries: 0 });
});
after(() => provider.close());

const headers = (id: string, output: string, words: number) => ({
  headers: { "x-call-id": id, "x-test-output": output, "x-test-words": String(words) },
});
const billed = (id: string) => provider.ledger().find((c) => c.id === id)!;
const tools = [
  {
    type: "function" as const,
    function: {
      name: "lookup",
      description: "Find a word.",
      parameters: { type: "object", properties: { q: { type: "string" } } },
    },
  },
];

describe("the billing provider, read by the openai SDK", { timeout: 20_000 }, () => {
  test("a tool-call stream with include_usage: arguments assemble into JSON, the last chunk's usage is the ledger's", async () => {
    const stream = await client.chat.completions.create(
      {
        model: "m",
        messages: [{ role: "user", content: "find the day" }],
        tools,
        stream: true,
        stream_options: { include_usage: true },
      },
      headers("s1", "tools", 40),
    );
    let args = "";
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        args += c.delta.tool_calls?.[0]?.function?.arguments ?? "";
        finish = c.finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(finish, "tool_calls");
    assert.equal(
      (JSON.parse(args) as { q: string }).q.split(" ").length - 1,
      40,
      "40 words in the arguments",
    );
    const b = billed("s1");
    assert.deepEqual([usage?.prompt_tokens, usage?.completion_tokens], [b.prompt, b.completion]);
    // The rule: 3 per message + 3 for the reply + the text + the tools' JSON.
    assert.equal(b.prompt, 3 + 3 + countTokens("find the day") + countTokens(JSON.stringify(tools)));
    assert.equal(b.completion, countTokens("lookup") + countTokens(args));
  });

  test("a reasoning stream without include_usage carries no usage; reasoning and content are billed as generated", async () => {
    const stream = await client.chat.completions.create(
      { model: "m", messages: [{ role: "user", content: "think" }], stream: true },
      headers("s2", "reasoning", 100),
    );
    let reasoning = "";
    let content = "";
    for await (const chunk of stream) {
      assert.equal(chunk.usage, undefined, "no usage field at all when none was asked for");
      const delta = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
      reasoning += delta?.reasoning_content ?? "";
      content += delta?.content ?? "";
    }
    assert.ok(reasoning.length > 0 && content.length > 0);
    await waitFor("the stream's end in the ledger", () => billed("s2")?.done === true);
    assert.equal(billed("s2").completion, 100);
    assert.equal(countTokens(reasoning) + countTokens(content), 100);
  });

  test("a JSON answer with logprobs is over 16 KiB and its usage is the ledger's", async () => {
    const raw = await client.chat.completions
      .create(
        { model: "m", messages: [{ role: "user", content: "long" }], logprobs: true },
        headers("j1", "text", 400),
      )
      .asResponse();
    const text = await raw.text();
    assert.ok(text.length > 16 * 1024, `${text.length} bytes`);
    const body = JSON.parse(text) as OpenAI.ChatCompletion;
    assert.equal(body.choices[0]!.logprobs!.content!.length, 400);
    assert.deepEqual([body.usage!.prompt_tokens, body.usage!.completion_tokens], [billed("j1").prompt, 400]);
  });

  test("images cost OpenAI's tile formula; a caller that leaves mid-stream is billed only what was generated", async () => {
    assert.equal(imageTokens({ w: 1024, h: 1024 }, "high"), 765);
    assert.equal(imageTokens({ w: 2048, h: 4096 }, "high"), 1105);
    assert.equal(imageTokens({ w: 4096, h: 4096 }, "low"), 85);
    const abort = new AbortController();
    const res = await request(`${provider.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers("g1", "text", 6000).headers },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "go" }], stream: true }),
      signal: abort.signal,
    });
    for await (const _ of res.body) break;
    abort.abort();
    await waitFor("the provider to see the caller leave", () => billed("g1")?.done === true);
    const b = billed("g1");
    assert.equal(b.gone, true);
    assert.ok(b.completion > 0 && b.completion < 6000, `billed ${b.completion} of 6000`);
  });

  test("no call id is billed twice without being reported", async () => {
    const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }] });
    const send = () =>
      request(`${provider.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers("d1", "text", 4).headers },
        body,
      }).then((r) => r.body.text());
    await send();
    await send();
    assert.deepEqual(provider.duplicates(), ["d1"]);
  });
});
