import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { askForStreamUsage, takesStreamOptions } from "./stream-options.js";
import { generatedChars, MAX_EVENT_BYTES, StreamText, withoutUsage } from "./stream-usage.js";

const ev = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;

describe("generated text of a stream (issue 21)", () => {
  test("counts content, text, tool-call arguments, reasoning and refusals", () => {
    const text =
      ev({ choices: [{ delta: { content: "abcd" } }] }) +
      ev({ choices: [{ text: "ef" }] }) +
      ev({
        choices: [{ delta: { tool_calls: [{ index: 0, function: { name: "f", arguments: '{"a":1}' } }] } }],
      }) +
      ev({ choices: [{ delta: { reasoning_content: "think" } }] }) +
      ev({ choices: [{ delta: { reasoning: "more" } }] }) +
      ev({ choices: [{ delta: { refusal: "no" } }] });
    // '{"a":1}' is 7 characters, written \"a\" in the JSON: 9
    assert.equal(generatedChars(text), 4 + 2 + 9 + 5 + 4 + 2);
  });

  test("events cut anywhere by chunk boundaries count the same", () => {
    const text = Buffer.from(
      ev({ choices: [{ delta: { content: "hello world" } }] }).replace("\n\n", "\r\n\r\n") +
        ev({ choices: [{ delta: { tool_calls: [{ function: { arguments: "x".repeat(50) } }] } }] }),
    );
    for (let size = 1; size <= text.length; size++) {
      const s = new StreamText(false);
      const out: Buffer[] = [];
      for (let i = 0; i < text.length; i += size) out.push(s.push(text.subarray(i, i + size)));
      assert.equal(s.generated(), 11 + 50, `chunks of ${size}`);
      assert.ok(Buffer.concat(out).equals(text), "passed through unchanged");
    }
  });

  test("a stream of an unknown shape, or with an overlong event, is not counted (its estimate stays)", () => {
    const s = new StreamText(false);
    s.push(Buffer.from(ev({ type: "ping" })));
    assert.equal(s.generated(), undefined);
    const long = new StreamText(false);
    long.push(Buffer.from(`data: {"choices":[{"delta":{"content":"${"a".repeat(MAX_EVENT_BYTES)}`));
    long.push(Buffer.from('"}}]}\n\n'));
    assert.equal(long.generated(), undefined);
  });
});

describe("the usage sluice asked for is not the client's (issue 21)", () => {
  const chunk = (content: string) =>
    `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"${content}"},"finish_reason":null}]`;
  const asked = `${chunk("Hi")},"usage":null}\n\n${chunk("!")},"usage":null}\n\ndata: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\ndata: [DONE]\n\n`;
  const plain = `${chunk("Hi")}}\n\n${chunk("!")}}\n\ndata: [DONE]\n\n`;

  test("the usage chunk is dropped and every usage:null cut out, byte for byte", () => {
    assert.equal(withoutUsage(Buffer.from(asked)).toString(), plain);
    // at every chunk boundary
    const bytes = Buffer.from(asked);
    for (let size = 1; size <= bytes.length; size += 3) {
      const s = new StreamText(true);
      const out: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += size) out.push(s.push(bytes.subarray(i, i + size)));
      const rest = s.end();
      if (rest !== null) out.push(rest);
      assert.equal(Buffer.concat(out).toString(), plain, `chunks of ${size}`);
      assert.equal(s.generated(), 3);
    }
  });

  test("usage:null first in a chunk, and usage beside choices (re-serialised without it)", () => {
    assert.equal(
      withoutUsage(Buffer.from('data: {"usage":null, "choices":[]}\n\n')).toString(),
      'data: {"choices":[]}\n\n',
    );
    assert.equal(
      withoutUsage(
        Buffer.from('data: {"choices":[{"delta":{}}],"usage":{"prompt_tokens":1}}\n\n'),
      ).toString(),
      'data: {"choices":[{"delta":{}}]}\n\n',
    );
  });

  test("the request: the option is written in first, the rest of the bytes kept", () => {
    const body = Buffer.from('{"model":"m","stream":true,"seed":12345678901234567890,"messages":[]}');
    const out = askForStreamUsage(body);
    assert.equal(out.strip, true);
    assert.equal(
      out.body.toString(),
      '{"stream_options":{"include_usage":true},"model":"m","stream":true,"seed":12345678901234567890,"messages":[]}',
    );
    const asked = Buffer.from('{"model":"m","stream":true,"stream_options":{"include_usage":true}}');
    assert.deepEqual(askForStreamUsage(asked), { body: asked, strip: false });
    const off = askForStreamUsage(
      Buffer.from('{"model":"m","stream":true,"stream_options":{"include_usage":false,"x":1}}'),
    );
    assert.equal(off.strip, true);
    assert.deepEqual(JSON.parse(off.body.toString()).stream_options, { include_usage: true, x: 1 });
    // a nested "stream_options" (a tool's schema) is not the request's
    const nested = askForStreamUsage(
      Buffer.from('{"model":"m","stream":true,"tools":[{"p":{"stream_options":1}}]}'),
    );
    assert.equal(nested.strip, true);
    assert.deepEqual(JSON.parse(nested.body.toString()).stream_options, { include_usage: true });
    assert.ok(takesStreamOptions("/v1/chat/completions?x=1") && takesStreamOptions("/v1/completions"));
    assert.ok(!takesStreamOptions("/v1/responses") && !takesStreamOptions("/v1/embeddings"));
  });
});
