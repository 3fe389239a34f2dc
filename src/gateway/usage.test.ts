import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { generatedChars, readUsage, settledUsage, UsageScanner, UsageTap, usageIn } from "./usage.js";

test("finds usage in a JSON answer", () => {
  const tap = new UsageTap(false);
  tap.push(Buffer.from('{"choices":[],"usage":{"prompt_tokens":12,'));
  tap.push(Buffer.from('"completion_tokens":30,"total_tokens":42}}'));
  assert.deepEqual(tap.usage(), { promptTokens: 12, completionTokens: 30 });
});

test("finds usage in the final SSE chunk of a long stream", () => {
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

describe("UsageScanner (issue 21: JSON answers of any size)", () => {
  const usage = '"usage": {"prompt_tokens": 11, "completion_tokens": 2222, "total_tokens": 2233}';

  test("a 5 MB JSON answer: the usage after it is found, at any chunk boundary, keeping none of the body", () => {
    const content = "x".repeat(5 * 1024 * 1024);
    const body = Buffer.from(`{"id":"a","choices":[{"message":{"content":"${content}"}}],${usage}}`);
    for (const size of [1, 7, 4096, 65_536, body.length]) {
      if (size === 1 && body.length > 100_000) {
        // byte by byte only over the tail (the whole body a byte at a time would take long)
        const s = new UsageScanner();
        s.push(body.subarray(0, body.length - 200));
        for (let i = body.length - 200; i < body.length; i++) s.push(body.subarray(i, i + 1));
        assert.deepEqual(s.usage(), { promptTokens: 11, completionTokens: 2222 }, "byte by byte");
        continue;
      }
      const s = new UsageScanner();
      for (let i = 0; i < body.length; i += size) s.push(body.subarray(i, i + size));
      assert.deepEqual(s.usage(), { promptTokens: 11, completionTokens: 2222 }, `chunks of ${size}`);
    }
  });

  test("usage written first, then a long body, is still found", () => {
    assert.deepEqual(usageIn(`{${usage},"choices":[{"text":"${"y".repeat(100_000)}"}]}`), {
      promptTokens: 11,
      completionTokens: 2222,
    });
  });

  test('generated text cannot fake a usage: a "usage" inside a string is escaped', () => {
    const fake = '\\"usage\\":{\\"prompt_tokens\\":0,\\"completion_tokens\\":0}';
    assert.deepEqual(usageIn(`{"choices":[{"text":"${fake}"}],${usage}}`), {
      promptTokens: 11,
      completionTokens: 2222,
    });
    assert.equal(usageIn(`{"choices":[{"text":"${fake}"}]}`), undefined);
  });

  test("null usage (every chunk of a stream that asked) and unreadable objects are not a report of zero", () => {
    assert.equal(usageIn('data: {"choices":[],"usage":null}\n\n'), undefined);
    assert.equal(usageIn('{"usage":{"cost":3}}'), undefined);
    assert.equal(usageIn('{"object":"usage","x":1}'), undefined);
    assert.equal(readUsage(null), undefined);
    // the Responses API's names, and a total alone
    assert.deepEqual(usageIn('{"usage":{"input_tokens":4,"output_tokens":6}}'), {
      promptTokens: 4,
      completionTokens: 6,
    });
    assert.deepEqual(usageIn('{"usage":{"total_tokens":9}}'), { promptTokens: 9, completionTokens: 0 });
  });

  test("counts are taken from the last object naming each: Anthropic's stream names the prompt first, the output last", () => {
    const s = new UsageScanner();
    s.push(
      Buffer.from(
        'event: message_start\ndata: {"message":{"usage":{"input_tokens":25,"output_tokens":1}}}\n\n',
      ),
    );
    s.push(Buffer.from('event: message_delta\ndata: {"usage":{"output_tokens":15}}\n\n'));
    assert.deepEqual(s.usage(), { promptTokens: 25, completionTokens: 15 });
    // a report without a prompt count is not a prompt of zero: the estimate stands in
    const only = new UsageScanner();
    only.push(Buffer.from('{"usage":{"completion_tokens":7}}'));
    assert.deepEqual(only.usage(40), { promptTokens: 40, completionTokens: 7 });
  });

  test("a usage object past 4 KiB is not kept", () => {
    const big = `{"usage":{"prompt_tokens":1,"completion_tokens":1,"pad":"${"z".repeat(5000)}"}}`;
    assert.equal(usageIn(big), undefined);
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
