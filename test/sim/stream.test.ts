import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { simText } from "../../src/sim/openai.js";
import { type SimServer, startSim } from "../../src/sim/server.js";
import { chatBody, sseData } from "../helpers/index.js";
import { post } from "./helpers.js";

describe("sim server: streaming", () => {
  let sim: SimServer;
  before(async () => {
    // 1000 tok/s: paced by real timers, yet 4 tokens take ~3 ms.
    sim = await startSim({ serviceMs: 1, tokensPerSecond: 1000 });
  });
  after(() => sim.close());

  test("streams chat chunks that end with a usage chunk and [DONE]", async () => {
    const res = await post(
      sim.url,
      "/v1/chat/completions",
      chatBody("m", "stream me", { stream: true, max_tokens: 4 }),
    );
    assert.equal(res.status, 200);
    assert.equal(res.headers["content-type"], "text/event-stream");
    const events = sseData(res.text);
    assert.equal(events.at(-1), "[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    for (const c of chunks) assert.equal(c.object, "chat.completion.chunk");
    assert.deepEqual(chunks[0].choices[0].delta, { role: "assistant", content: "" });
    const text = chunks
      .flatMap((c) => c.choices)
      .map((ch: { delta: { content?: string } }) => ch.delta.content ?? "")
      .join("");
    assert.equal(text, simText("m", "stream me", 4));
    // role chunk, 4 tokens, the finish chunk, the usage chunk.
    assert.equal(chunks.length, 7);
    assert.equal(chunks[5].choices[0].finish_reason, "length");
    assert.deepEqual(chunks[6].choices, []);
    assert.deepEqual(chunks[6].usage, { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    // Without include_usage only the final chunk names usage.
    assert.equal(
      chunks.slice(0, 6).some((c) => "usage" in c),
      false,
    );
  });

  test("adds usage: null to every other chunk when stream_options.include_usage is set", async () => {
    const body = chatBody("m", "x", { stream: true, max_tokens: 2, stream_options: { include_usage: true } });
    const chunks = sseData((await post(sim.url, "/v1/chat/completions", body)).text)
      .slice(0, -1)
      .map((e) => JSON.parse(e));
    assert.deepEqual(
      chunks.map((c) => c.usage),
      [null, null, null, null, { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }],
    );
  });

  test("streams text completions in the text_completion chunk format", async () => {
    const res = await post(
      sim.url,
      "/v1/completions",
      JSON.stringify({ model: "c", prompt: "p", stream: true }),
    );
    const chunks = sseData(res.text)
      .slice(0, -1)
      .map((e) => JSON.parse(e));
    const text = chunks
      .flatMap((c) => c.choices)
      .map((ch: { text: string }) => ch.text)
      .join("");
    assert.equal(text, simText("c", "p", 16));
    assert.equal(chunks.at(-1).usage.completion_tokens, 16);
  });

  test("writes the whole stream at once with tokensPerSecond 0 and serviceMs 0", async () => {
    const fast = await startSim({ serviceMs: 0, tokensPerSecond: 0 });
    try {
      const res = await post(fast.url, "/v1/chat/completions", chatBody("m", "now", { stream: true }));
      const events = sseData(res.text);
      assert.equal(events.length, 1 + 16 + 1 + 1 + 1);
      assert.equal(events.at(-1), "[DONE]");
    } finally {
      await fast.close();
    }
  });
});
