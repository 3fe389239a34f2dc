/**
 * `createSluiceFetch` as the official OpenAI SDK's `fetch` (issue 12): an app that floods a
 * 4 + 4 gateway through the SDK sees every answer and no 429, with the SDK's own retries off so
 * nothing else could have hidden one; a streamed completion goes through the held body whole.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { createSluiceFetch } from "../../src/client/index.js";
import { simText } from "../../src/sim/openai.js";
import { assertNothingLeft, model, type Stack, SUITE, startStack, waitFor } from "../gateway/helpers.js";
import { type GatedPod, gatedPod, recordArrivals } from "./helpers.js";

const TOKENS = 6;

describe("the OpenAI SDK with createSluiceFetch", SUITE, () => {
  let stack: Stack;
  let gated: GatedPod;
  let client: OpenAI;

  before(async () => {
    // The pod holds its calls until the test opens its gate: 8 are taken, the rest refused at once.
    gated = await gatedPod(20);
    stack = await startStack({
      sims: [],
      config: () => ({ models: [model("m", [gated.pod.url], { queue_limit: 4, queue_timeout_s: 60 }, 4)] }),
    });
    client = new OpenAI({
      baseURL: `${stack.url}/v1`,
      apiKey: "x",
      // The SDK's own retries are off: a 429 that got past the client would fail the call.
      maxRetries: 0,
      fetch: createSluiceFetch({ baseUrl: stack.url, priority: "bulk" }),
    });
  });
  after(async () => {
    await stack.close();
    await gated.pod.close();
  });

  test("30 concurrent completions into 4 + 4 all succeed; the gateway's 22 refusals never reach the SDK", async () => {
    const recorder = recordArrivals(stack);
    const answers = Array.from({ length: 30 }, (_, i) =>
      client.chat.completions
        .create({ model: "m", messages: [{ role: "user", content: `q${i}` }] })
        .withResponse(),
    );
    // Bounds for a hang, not measures: the SDK's and the gateway's first calls are slow on a busy
    // machine (the 30 took 1.1–2.1 s to arrive at load ~10, and over 3 s in a full-suite run).
    await waitFor("the first attempts to be refused or held", () => recorder.arrivals.length === 30, 15_000);
    await waitFor(
      "the refusals to end",
      () => recorder.arrivals.filter((a) => a.status === 429).length === 22,
      15_000,
    );
    gated.open();
    (await Promise.all(answers)).forEach(({ data, response }, i) => {
      assert.equal(data.choices[0]!.message.content, `echo: q${i}`);
      assert.equal(response.headers.get("x-sluice-priority"), "bulk");
    });
    recorder.stop();
    assert.equal(recorder.arrivals.filter((a) => a.status === 200).length, 30);
    await assertNothingLeft(stack);
  });
});

describe("a streamed completion through the OpenAI SDK with createSluiceFetch", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: 1, tokensPerSecond: 2000, defaultOutputTokens: TOKENS }],
      config: ([pod]) => ({ models: [model("m", [pod!])] }),
    });
  });
  after(() => stack.close());

  test("arrives whole", async () => {
    const client = new OpenAI({
      baseURL: `${stack.url}/v1`,
      apiKey: "x",
      maxRetries: 0,
      fetch: createSluiceFetch({ baseUrl: stack.url }),
    });
    const stream = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "stream" }],
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    assert.equal(text, simText("m", "stream", TOKENS));
    await assertNothingLeft(stack);
  });
});
