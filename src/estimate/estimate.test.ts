import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  estimatePromptTokens,
  estimateTokens,
  inputOnly,
  loadTokenizer,
  promptTokens,
  TOKENIZED_CHARS,
  tailTokens,
  textTokens,
} from "./estimate.js";
import { IMAGE_TOKENS_DEFAULT, inlineImageSize, tileTokens } from "./media.js";

const PROSE_LONG =
  "Sluice admits each call on its lane and reserves its tokens before the pod sees it. ".repeat(400);

describe("the token estimate (estimate.ts)", () => {
  test("chat messages: the tokenizer over their text, plus 4 per message; an image part its image cost", () => {
    const body = {
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: [{ type: "text", text: "hello world" }, { type: "image_url" }] },
      ],
    };
    assert.equal(promptTokens(body, 999), textTokens("You are terse.hello world") + 8 + IMAGE_TOKENS_DEFAULT);
    assert.equal(textTokens("hello world ".repeat(20).trim()), 40, "o200k_base, not characters ÷ 4 (60)");
  });

  test("every billed input counts: tools, functions, tool calls and their arguments, names, refusals, response_format", () => {
    const tok = loadTokenizer();
    const description = "Looks up the weather for a city and returns it in detail. ".repeat(50);
    const base = { model: "m", messages: [{ role: "user", content: "hi" }] };
    const bare = promptTokens(base, 0);
    const withTool = promptTokens(
      { ...base, tools: [{ type: "function", function: { name: "weather", description, parameters: {} } }] },
      0,
    );
    assert.ok(withTool - bare >= tok(description), `a tool's description counts: ${withTool - bare}`);
    const legacy = promptTokens({ ...base, functions: [{ name: "weather", description }] }, 0);
    assert.ok(legacy - bare >= tok(description), "and a legacy function's");
    const args = JSON.stringify({ city: description });
    const called = promptTokens(
      {
        ...base,
        messages: [
          ...base.messages,
          {
            role: "assistant",
            content: null,
            refusal: "no",
            tool_calls: [{ id: "c1", type: "function", function: { name: "weather", arguments: args } }],
          },
          { role: "tool", tool_call_id: "c1", name: "weather", content: "sunny" },
        ],
      },
      0,
    );
    assert.ok(called - bare >= tok(args) + 8, `tool call arguments count: ${called - bare}`);
    const schema = { name: "out", schema: { type: "object", description } };
    const formatted = promptTokens(
      { ...base, response_format: { type: "json_schema", json_schema: schema } },
      0,
    );
    assert.ok(formatted - bare >= tok(description), "response_format's schema counts");
    // A schema's property names are rendered into the prompt too: text hidden in keys counts.
    const keyed = promptTokens(
      {
        ...base,
        tools: [
          { type: "function", function: { name: "f", parameters: { properties: { [description]: {} } } } },
        ],
      },
      0,
    );
    assert.ok(keyed - bare >= tok(description), `a property name counts: ${keyed - bare}`);
    // Settings are not input: a long `user` or `metadata` is not billed.
    assert.equal(promptTokens({ ...base, user: "x".repeat(1000), temperature: 0.5 }, 0), bare);
  });

  test("images: detail low 85, high of unknown size image_tokens, an inline PNG its tiles; audio by its size", () => {
    const part = (url: string, detail?: string) => ({
      messages: [{ role: "user", content: [{ type: "image_url", image_url: { url, detail } }] }],
    });
    const base64 = "A".repeat(1_000_000);
    assert.equal(
      promptTokens(part(`data:image/jpeg;base64,${base64}`, "low"), 0),
      4 + 85,
      "the payload is not text",
    );
    assert.equal(promptTokens(part("https://x/y.jpg", "high"), 0) - textTokens("https://x/y.jpg"), 4 + 1445);
    assert.equal(
      promptTokens(part("https://x/y.jpg"), 0, { imageTokens: 48169 }) - textTokens("https://x/y.jpg"),
      4 + 48169,
    );
    // A 1024 × 1024 PNG: scaled to 768 × 768, 4 tiles → 765 (OpenAI's worked example).
    const png = Buffer.alloc(24);
    png.writeUInt32BE(0x89504e47, 0);
    png.write("IHDR", 12, "latin1");
    png.writeUInt32BE(1024, 16);
    png.writeUInt32BE(1024, 20);
    assert.equal(
      inlineImageSize(`data:image/png;base64,${png.toString("base64")}AAAA`)?.join("x"),
      "1024x1024",
    );
    assert.equal(
      promptTokens(part(`data:image/png;base64,${png.toString("base64")}AAAA`, "auto"), 0),
      4 + 765,
    );
    assert.equal(tileTokens(2048, 4096, "high"), 1105, "OpenAI's 2048 × 4096 example: 6 tiles");
    const audio = {
      messages: [
        {
          role: "user",
          content: [{ type: "input_audio", input_audio: { data: "A".repeat(400_000), format: "mp3" } }],
        },
      ],
    };
    assert.equal(promptTokens(audio, 0), 4 + 750, "300 000 bytes of mp3 at 400 bytes a token");
  });

  test("completion prompts and embedding inputs: strings, lists, token ids as they are; other bodies ÷ 4", () => {
    assert.equal(promptTokens({ prompt: "hello world" }, 0), 2);
    assert.equal(promptTokens({ prompt: ["hello", "world"] }, 0), 2);
    assert.equal(promptTokens({ input: [101, 102, 103] }, 0), 3);
    assert.equal(promptTokens({ input: [[101, 102], [103]] }, 0), 3);
    assert.equal(promptTokens({ something: "else" }, 400), 100);
  });

  test("a deep input is walked without recursion (no stack overflow)", () => {
    let deep: unknown = "leaf";
    for (let i = 0; i < 200_000; i++) deep = [deep];
    assert.equal(promptTokens({ input: deep }, 0), textTokens("leaf"));
  });

  test("text past the tokenized head: ASCII ÷ 4, CJK one a character, never below the head's own ratio", () => {
    const long = "a".repeat(TOKENIZED_CHARS + 4000);
    assert.equal(textTokens(long), textTokens("a".repeat(TOKENIZED_CHARS)) + 1000);
    const cjk = "模型服务器的限流网关".repeat(20_000); // 200 000 characters, 3 bytes each
    // A CJK character weighs 16 against the head: 512 of them are tokenized, the rest 1 token each.
    const head = textTokens(cjk.slice(0, TOKENIZED_CHARS / 16));
    assert.equal(textTokens(cjk), head + (cjk.length - TOKENIZED_CHARS / 16));
    assert.equal(tailTokens(100, 100, 0.1), 25);
    assert.equal(tailTokens(100, 300, 0.1), 100);
    assert.equal(tailTokens(100, 100, 0.5), 50, "the head's ratio when it is higher");
    // A short English instruction, then code: the rest counts at the code samples' ratio, not English's.
    const code = "if(a[i]!==b[j]){x.y(z,0x7f);}".repeat(4000);
    const mixed = textTokens(`${"Please review the following code. ".repeat(30)}${code}`);
    assert.ok(
      mixed >= loadTokenizer()(code) * 0.95,
      `${mixed} tokens for code counted at ${loadTokenizer()(code)}`,
    );
  });

  test("hostile text costs bounded time: runs without a space are tokenized in short pieces", () => {
    // The tokenizer is quadratic in a run's length: 16 K × "a" took 322 ms in one piece.
    const started = performance.now();
    const a = textTokens("a".repeat(64 * 1024));
    const cjk = textTokens("模型服务器的限流网关请求令牌".repeat(5000));
    const ms = performance.now() - started;
    assert.ok(ms < 1000, `${ms.toFixed(0)} ms for 64 K "a" and 70 000 CJK characters`);
    assert.ok(a >= 8 * 1024 && cjk >= 70_000 - 512, `${a} and ${cjk} tokens: the rule past the head`);
    // The gateway's estimate of a long English prompt: never under the provider's count, ≤ 1.3 × it.
    const body = { messages: [{ role: "user", content: PROSE_LONG }] };
    const billed = promptTokens(body, 0);
    const estimated = estimatePromptTokens(body, 0);
    assert.ok(
      estimated >= billed && estimated <= billed * 1.3,
      `estimated ${estimated} for ${billed} billed`,
    );
    assert.equal(estimatePromptTokens({ prompt: "short" }, 0), promptTokens({ prompt: "short" }, 0));
    // A piece boundary costs at most one token: English counts as it did in one piece.
    const prose = "The quick brown fox jumps over the lazy dog. ".repeat(5);
    assert.equal(textTokens(prose), loadTokenizer()(prose));
  });

  test("the estimate: prompt + the output bound, else the model's default, per choice; embeddings their input only", () => {
    assert.equal(estimateTokens(100, 50, 4096, false), 150);
    assert.equal(
      estimateTokens(100, undefined, 4096, false),
      4196,
      "leaving max_tokens out cannot dodge the budget",
    );
    assert.equal(estimateTokens(100, 0, 4096, false), 100);
    assert.equal(estimateTokens(100, 50, 4096, false, 4), 300, "n: 4 choices of 50");
    assert.equal(estimateTokens(100, undefined, 4096, true), 100);
    assert.ok(
      inputOnly("/v1/embeddings") && inputOnly("/v1/embeddings?x=1") && !inputOnly("/v1/chat/completions"),
    );
  });
});
