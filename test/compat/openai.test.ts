/**
 * The official `openai` client through sluice (DESIGN §3.2: "OpenAI-shaped JSON body, so every
 * OpenAI SDK surfaces it"): completions, streams and embeddings pass through unchanged, and
 * sluice's refusals surface as the SDK's own error classes with the code and the retry hint.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { simEmbedding, simText } from "../../src/sim/openai.js";
import {
  assertNothingLeft,
  held,
  model,
  type Stack,
  SUITE,
  startStack,
  waitFor,
} from "../gateway/helpers.js";

const TOKENS = 12;

/** A lane's snapshot by name. */
const lane = (stack: Stack, name: string) =>
  stack.gateway.governor.snapshot().lanes.find((l) => l.lane === name)!;

describe("the openai client through sluice", SUITE, () => {
  let stack: Stack;
  let client: OpenAI;

  before(async () => {
    stack = await startStack({
      sims: [
        { maxNumSeqs: 2, serviceMs: 1, tokensPerSecond: 2000, defaultOutputTokens: TOKENS },
        { maxNumSeqs: 1, serviceMs: 60_000 },
        { maxNumSeqs: 1, serviceMs: 60_000 },
      ],
      config: ([chatPod, busyPod, slowPod]) => ({
        models: [
          model("qwen", [chatPod!], {}, 2),
          // One slot and one waiting place for the 429. The waiter's timeout is far longer than
          // any test (it ends when the test aborts it): with 0.2 s, a slow machine timed it out
          // before the third call arrived, which then queued and got 503 instead of 429.
          model("busy", [busyPod!], { queue_limit: 1, queue_timeout_s: 300 }),
          // Its own lane and pod for the 503: timing out is the behaviour under test there, so
          // its length does not matter, and no other test's waiters share the lane.
          model("slow", [slowPod!], { queue_limit: 1, queue_timeout_s: 0.2 }),
        ],
      }),
    });
    // maxRetries 0: a refusal must reach the test, not be retried by the SDK.
    client = new OpenAI({ baseURL: `${stack.url}/v1`, apiKey: "x", maxRetries: 0 });
  });
  after(() => stack.close());

  test("chat.completions.create returns the pod's completion", async () => {
    const { data, response } = await client.chat.completions
      .create({ model: "qwen", messages: [{ role: "user", content: "hello sluice" }] })
      .withResponse();
    assert.equal(data.object, "chat.completion");
    assert.equal(data.choices[0]!.message.content, simText("qwen", "hello sluice", TOKENS));
    assert.equal(data.usage?.completion_tokens, TOKENS);
    assert.equal(response.headers.get("x-sluice-lane"), "qwen");
    await assertNothingLeft(stack);
  });

  test("chat.completions.create with stream: true yields every chunk", async () => {
    const stream = await client.chat.completions.create({
      model: "qwen",
      messages: [{ role: "user", content: "stream please" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let chunks = 0;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? "";
      usage = chunk.usage ?? usage;
    }
    assert.equal(text, simText("qwen", "stream please", TOKENS));
    assert.ok(chunks > TOKENS, `${chunks} chunks`);
    assert.equal(usage?.completion_tokens, TOKENS);
    await assertNothingLeft(stack);
  });

  test("embeddings.create returns one vector per input", async () => {
    const res = await client.embeddings.create({
      model: "qwen",
      input: ["one", "two"],
      encoding_format: "float",
    });
    assert.equal(res.data.length, 2);
    assert.deepEqual(res.data[1]!.embedding, simEmbedding("qwen", "two", 8));
    await assertNothingLeft(stack);
  });

  test("embeddings.create with the SDK's default encoding (base64) decodes to the same vectors", async () => {
    // No encoding_format: the SDK asks for base64 and decodes it (the demo once answered [0, 0]).
    const res = await client.embeddings.create({ model: "qwen", input: ["one", "two"] });
    assert.equal(res.data.length, 2);
    const expected = Array.from(new Float32Array(simEmbedding("qwen", "two", 8)));
    assert.deepEqual(res.data[1]!.embedding, expected);
    assert.ok(
      expected.some((x) => x !== 0),
      "the expected vector is not all zeros",
    );
    await assertNothingLeft(stack);
  });

  test("a 429 from sluice is a RateLimitError carrying queue_full and retry-after", async () => {
    const hold = new AbortController();
    const holding = held(stack.url, "busy", hold.signal, "one");
    await waitFor("the held call to run", () => stack.sims[1]!.stats().running === 1);
    const waiting = held(stack.url, "busy", hold.signal, "two");
    await waitFor("the second call to queue", () => lane(stack, "busy").queued === 1);

    const error = await client.chat.completions
      .create({ model: "busy", messages: [{ role: "user", content: "three" }] })
      .then(
        () => assert.fail("expected a refusal"),
        (e: unknown) => e,
      );
    assert.ok(error instanceof OpenAI.RateLimitError, `got ${String(error)}`);
    assert.equal(error.status, 429);
    assert.equal(error.code, "queue_full");
    assert.equal(error.type, "sluice_capacity");
    const body = error.error as { code: string; lane: string; retry_after_ms: number; queue_limit: number };
    assert.equal(body.code, "queue_full");
    assert.equal(body.lane, "busy");
    assert.equal(body.queue_limit, 1);
    assert.ok(Number(error.headers.get("retry-after")) >= 1);
    assert.equal(Number(error.headers.get("retry-after-ms")), body.retry_after_ms);
    assert.equal(error.headers.get("x-sluice-reason"), "queue_full");

    hold.abort();
    await Promise.all([holding, waiting]);
    await assertNothingLeft(stack);
  });

  test("a 503 queue_timeout is an InternalServerError carrying its code", async () => {
    const hold = new AbortController();
    const holding = held(stack.url, "slow", hold.signal, "one");
    await waitFor("the held call to run", () => stack.sims[2]!.stats().running === 1);
    const error = await client.chat.completions
      .create({ model: "slow", messages: [{ role: "user", content: "wait" }] })
      .then(
        () => assert.fail("expected a refusal"),
        (e: unknown) => e,
      );
    assert.ok(error instanceof OpenAI.InternalServerError, `got ${String(error)}`);
    assert.equal(error.status, 503);
    assert.equal(error.code, "queue_timeout");
    assert.ok(Number(error.headers.get("retry-after")) >= 1);
    hold.abort();
    await holding;
    await assertNothingLeft(stack);
  });

  test("an unknown model is a NotFoundError", async () => {
    const error = await client.chat.completions
      .create({ model: "gpt-nope", messages: [{ role: "user", content: "x" }] })
      .then(
        () => assert.fail("expected a refusal"),
        (e: unknown) => e,
      );
    assert.ok(error instanceof OpenAI.NotFoundError, `got ${String(error)}`);
    assert.equal(error.code, "unknown_model");
    assert.equal(error.param, "body.model");
  });
});
