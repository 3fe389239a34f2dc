/**
 * `expectedAnswer` computes, from the request alone, the exact bytes the sim sends: the load
 * runner's byte check rests on it, so it is compared here with what a real sim wrote.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { expectedAnswer } from "../../src/sim/answer.js";
import { type SimServer, startSim } from "../../src/sim/server.js";
import { post } from "./helpers.js";

describe("expectedAnswer", () => {
  let sim: SimServer;
  before(async () => {
    sim = await startSim({ serviceMs: 0, tokensPerSecond: 500, defaultOutputTokens: 12, embeddingDims: 5 });
  });
  after(() => sim.close());

  const cases: Array<[string, "chat" | "completion" | "embedding" | "echo", string, string]> = [
    [
      "a buffered chat",
      "chat",
      "/v1/chat/completions",
      '{"model":"m","messages":[{"role":"user","content":"hi"}]}',
    ],
    [
      "a chat cut by max_tokens",
      "chat",
      "/v1/chat/completions",
      '{"messages":[{"content":"x"}],"max_tokens":3}',
    ],
    [
      "a streamed chat",
      "chat",
      "/v1/chat/completions",
      '{"model":"q","stream":true,"messages":[{"role":"user","content":"stream me"}]}',
    ],
    [
      "a streamed chat with include_usage",
      "chat",
      "/v1/chat/completions",
      '{"model":"q","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"u"}]}',
    ],
    ["a streamed completion", "completion", "/v1/completions", '{"model":"c","prompt":"p","stream":true}'],
    ["embeddings", "embedding", "/v1/embeddings", '{"model":"e","input":["one","two"]}'],
    ["an OCR page", "echo", "/ocr/page-1", "x".repeat(3000)],
  ];
  for (const [name, kind, path, body] of cases) {
    test(`matches the sim's bytes for ${name}`, async () => {
      const res = await post(sim.url, path, body);
      assert.equal(res.status, 200);
      const o = sim.options;
      assert.equal(res.text, expectedAnswer(kind, body, o));
    });
  }

  test("differs when the answer would (another prompt, another model)", () => {
    const o = { model: "m", defaultOutputTokens: 12, embeddingDims: 5 };
    const a = expectedAnswer("chat", '{"model":"a","messages":[{"content":"x"}]}', o);
    assert.notEqual(a, expectedAnswer("chat", '{"model":"b","messages":[{"content":"x"}]}', o));
    assert.notEqual(a, expectedAnswer("chat", '{"model":"a","messages":[{"content":"y"}]}', o));
  });
});
