import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { simEmbedding, simText } from "../../src/sim/openai.js";
import { type SimServer, startSim } from "../../src/sim/server.js";
import { chatBody } from "../helpers/index.js";
import { get, post } from "./helpers.js";

describe("sim server: OpenAI endpoints", () => {
  let sim: SimServer;
  before(async () => {
    sim = await startSim({ serviceMs: 2, tokensPerSecond: 0, model: "sim-a" });
  });
  after(() => sim.close());

  test("answers a chat completion in OpenAI's shape with the request's model and usage", async () => {
    const res = await post(sim.url, "/v1/chat/completions", chatBody("qwen", "abcdefghi"));
    assert.equal(res.status, 200);
    assert.equal(res.headers["content-type"], "application/json");
    const body = JSON.parse(res.text);
    assert.equal(body.object, "chat.completion");
    assert.equal(body.model, "qwen");
    assert.match(body.id, /^chatcmpl-/);
    assert.equal(body.choices.length, 1);
    assert.equal(body.choices[0].message.role, "assistant");
    assert.equal(body.choices[0].message.content, simText("qwen", "abcdefghi", 16));
    assert.equal(body.choices[0].finish_reason, "stop");
    // 9 characters / 4, rounded up.
    assert.deepEqual(body.usage, { prompt_tokens: 3, completion_tokens: 16, total_tokens: 19 });
  });

  test("caps a text completion at max_tokens and reports finish_reason length", async () => {
    const res = await post(
      sim.url,
      "/v1/completions",
      JSON.stringify({ model: "c", prompt: "hi", max_tokens: 3 }),
    );
    const body = JSON.parse(res.text);
    assert.equal(body.object, "text_completion");
    assert.equal(body.choices[0].text, simText("c", "hi", 3));
    assert.equal(body.choices[0].text.split(" ").length, 3);
    assert.equal(body.choices[0].finish_reason, "length");
    assert.deepEqual(body.usage, { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 });
  });

  test("honours max_completion_tokens like max_tokens", async () => {
    const res = await post(sim.url, "/v1/chat/completions", chatBody("m", "x", { max_completion_tokens: 2 }));
    assert.equal(JSON.parse(res.text).usage.completion_tokens, 2);
  });

  test("answers embeddings with one deterministic vector per input", async () => {
    const res = await post(sim.url, "/v1/embeddings", JSON.stringify({ model: "e", input: ["one", "two"] }));
    const body = JSON.parse(res.text);
    assert.equal(body.object, "list");
    assert.equal(body.data.length, 2);
    assert.deepEqual(body.data[1], { object: "embedding", index: 1, embedding: simEmbedding("e", "two", 8) });
    assert.deepEqual(body.usage, { prompt_tokens: 2, total_tokens: 2 });
  });

  test("answers 400 with an OpenAI error body for bad JSON and keeps no slot", async () => {
    const res = await post(sim.url, "/v1/chat/completions", "{not json");
    assert.equal(res.status, 400);
    const body = JSON.parse(res.text);
    assert.equal(body.error.type, "invalid_request_error");
    assert.match(body.error.message, /invalid JSON/);
    const missing = await post(sim.url, "/v1/chat/completions", JSON.stringify({ model: "m" }));
    assert.equal(missing.status, 400);
    assert.equal(JSON.parse(missing.text).error.param, "messages");
    assert.equal(sim.stats().running, 0);
  });

  test("lists its model at /v1/models and answers /health", async () => {
    const models = await get(sim.url, "/v1/models");
    assert.deepEqual(
      JSON.parse(models.text).data.map((m: { id: string }) => m.id),
      ["sim-a"],
    );
    assert.equal((await get(sim.url, "/health")).status, 200);
    assert.equal((await get(sim.url, "/nope")).status, 404);
  });

  test("reads any method under the echo prefix and answers its byte count", async () => {
    const before = sim.stats().bodyBytesReceived;
    const res = await post(sim.url, "/ocr/v1/pages?lang=en", "x".repeat(12_345));
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.text), { pages: 1, bytes: 12_345 });
    assert.equal(sim.stats().bodyBytesReceived - before, 12_345);
  });

  test("records the Authorization headers it receives, for credential tests", async () => {
    sim.resetStats();
    await post(sim.url, "/v1/chat/completions", chatBody("m", "a"), {
      headers: { authorization: "Bearer upstream" },
    });
    await post(sim.url, "/v1/chat/completions", chatBody("m", "b"));
    const s = sim.stats();
    assert.deepEqual(s.authHeadersSeen, ["Bearer upstream"]);
    assert.equal(s.received, 2);
    assert.equal(s.completed, 2);
  });
});

describe("sim server: deterministic content", () => {
  test("gives byte-identical answers for the same request and seed, and different text for another prompt", async () => {
    const a = await startSim({ serviceMs: 1, seed: 7 });
    const b = await startSim({ serviceMs: 1, seed: 7 });
    try {
      const body = chatBody("m", "same prompt", { max_tokens: 8 });
      const fromA = await post(a.url, "/v1/chat/completions", body);
      const fromB = await post(b.url, "/v1/chat/completions", body);
      const again = await post(a.url, "/v1/chat/completions", body);
      assert.equal(fromA.text, fromB.text);
      assert.equal(fromA.text, again.text);
      const other = await post(
        a.url,
        "/v1/chat/completions",
        chatBody("m", "another prompt", { max_tokens: 8 }),
      );
      assert.notEqual(
        JSON.parse(other.text).choices[0].message.content,
        JSON.parse(fromA.text).choices[0].message.content,
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe("sim options", () => {
  test("rejects an invalid option naming it", async () => {
    await assert.rejects(
      startSim({ maxNumSeqs: 0 }),
      /sim\.maxNumSeqs: expected an integer ≥ 1, got 0 \(number\)/,
    );
    await assert.rejects(startSim({ overflow: "drop" as never }), /sim\.overflow/);
  });

  test("setProfile rejects an invalid value and keeps the old options", async () => {
    const sim = await startSim({ serviceMs: 1 });
    try {
      assert.throws(() => sim.setProfile({ serviceMs: -1 }), /sim\.serviceMs/);
      assert.equal(sim.options.serviceMs, 1);
    } finally {
      await sim.close();
    }
  });
});
