import assert from "node:assert/strict";
import { test } from "node:test";
import { UsageTap } from "./usage.js";

test("finds usage in a JSON answer", () => {
  const tap = new UsageTap(false);
  tap.push(Buffer.from('{"choices":[],"usage":{"prompt_tokens":12,'));
  tap.push(Buffer.from('"completion_tokens":30,"total_tokens":42}}'));
  assert.deepEqual(tap.usage(), { promptTokens: 12, completionTokens: 30 });
});

test("finds usage in the final SSE chunk, keeping only a bounded tail of a long stream", () => {
  const tap = new UsageTap(true);
  for (let i = 0; i < 5000; i++)
    tap.push(Buffer.from(`data: {"choices":[{"delta":{"content":"tok${i}"}}]}\n\n`));
  tap.push(
    Buffer.from(
      'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":5000}}\n\ndata: [DONE]\n\n',
    ),
  );
  assert.deepEqual(tap.usage(), { promptTokens: 5, completionTokens: 5000 });
  assert.ok(tap.bytes > 200_000);
});

test("reads a usage object that nests details (newer OpenAI and vLLM answers)", () => {
  const tap = new UsageTap(false);
  tap.push(
    Buffer.from(
      '{"choices":[{"message":{"content":"a } b"}}],"usage":{"prompt_tokens":7,"completion_tokens":3,' +
        '"prompt_tokens_details":{"cached_tokens":0},"total_tokens":10}}',
    ),
  );
  assert.deepEqual(tap.usage(), { promptTokens: 7, completionTokens: 3 });
});
