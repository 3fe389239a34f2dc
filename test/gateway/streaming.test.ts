/**
 * DESIGN §3.1 step 6: the answer is streamed back byte for byte, and a client that leaves —
 * while its call waits or while its answer streams — frees every slot it held and cancels the
 * upstream call.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { request } from "undici";
import {
  assertNothingLeft,
  call,
  chat,
  chatBody,
  dispatcherFor,
  held,
  LogCapture,
  model,
  type Stack,
  SUITE,
  startStack,
  waitFor,
} from "./helpers.js";

/** Bytes of an answer, read to the end. */
async function bytesOf(
  url: string,
  path: string,
  body: string,
): Promise<{ status: number; type: string; bytes: Buffer }> {
  const res = await request(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    dispatcher: dispatcherFor(url),
  });
  const bytes = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, type: String(res.headers["content-type"]), bytes };
}

describe("answers are the upstream's bytes", SUITE, () => {
  let stack: Stack;

  before(async () => {
    // Paced tokens, so a stream arrives in many chunks rather than one write.
    stack = await startStack({
      sims: [{ maxNumSeqs: 2, serviceMs: 2, tokensPerSecond: 1000, defaultOutputTokens: 24 }],
      config: ([pod]) => ({ models: [model("m", [pod!], {}, 2)] }),
    });
  });
  after(() => stack.close());

  // The sim's answer depends only on model and prompt (src/sim/openai.ts contentKey), so the
  // same request sent to the pod directly and through sluice must give the same bytes.
  const cases: [string, string, string][] = [
    ["a streamed chat completion", "/v1/chat/completions", chatBody("m", "stream me", { stream: true })],
    [
      "a streamed chat completion with include_usage",
      "/v1/chat/completions",
      chatBody("m", "usage too", { stream: true, stream_options: { include_usage: true } }),
    ],
    ["a JSON chat completion", "/v1/chat/completions", chatBody("m", "json me")],
    [
      "a streamed text completion",
      "/v1/completions",
      JSON.stringify({ model: "m", prompt: "p", stream: true }),
    ],
    ["an embedding", "/v1/embeddings", JSON.stringify({ model: "m", input: ["a", "b"] })],
  ];
  for (const [name, path, body] of cases) {
    test(`${name} through sluice is byte-identical to the pod's own`, async () => {
      const direct = await bytesOf(stack.sims[0]!.url, path, body);
      const proxied = await bytesOf(stack.url, path, body);
      assert.equal(direct.status, 200);
      assert.equal(proxied.status, 200);
      assert.equal(proxied.type, direct.type);
      assert.ok(direct.bytes.length > 0);
      assert.ok(proxied.bytes.equals(direct.bytes), "identical bodies");
      await assertNothingLeft(stack);
    });
  }
});

describe("a client that leaves", SUITE, () => {
  let stack: Stack;
  const log = new LogCapture();

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 4, serviceMs: 60_000 }],
      config: ([pod]) => ({ models: [model("m", [pod!], { queue_limit: 2 })] }),
      logger: pino({ level: "info" }, log.stream),
    });
  });
  after(() => stack.close());

  test("while queued: its waiter disappears and the pod never receives the call", async () => {
    const hold = new AbortController();
    const holding = held(stack.url, "m", hold.signal, "first");
    await waitFor("the held call to run", () => stack.sims[0]!.stats().running === 1);
    const leave = new AbortController();
    const leaving = held(stack.url, "m", leave.signal, "second");
    await waitFor("the second call to queue", () => stack.gateway.governor.snapshot().lanes[0]!.queued === 1);
    leave.abort();
    await leaving;
    await waitFor(
      "the waiter to leave the queue",
      () => stack.gateway.governor.snapshot().lanes[0]!.queued === 0,
    );
    assert.equal(stack.gateway.governor.snapshot().lanes[0]!.inflight, 1, "the held call still runs");
    // Freeing the slot must not wake the departed waiter.
    hold.abort();
    await holding;
    await assertNothingLeft(stack);
    assert.equal(stack.sims[0]!.stats().received, 1, "only the held call reached the pod");
  });

  test("while streaming: the upstream call is aborted and the slot freed", async () => {
    stack.sims[0]!.setProfile({ serviceMs: 1, tokensPerSecond: 20, defaultOutputTokens: 400 });
    const before = stack.sims[0]!.stats();
    const leave = new AbortController();
    const res = await request(`${stack.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: chatBody("m", "a long answer", { stream: true }),
      signal: leave.signal,
      dispatcher: stack.agent,
    });
    assert.equal(res.statusCode, 200);
    const first = await new Promise<string>((resolve) =>
      res.body.once("data", (c: Buffer) => resolve(String(c))),
    );
    assert.match(first, /^data: /);
    assert.equal(stack.gateway.governor.snapshot().lanes[0]!.inflight, 1);
    leave.abort();
    res.body.on("error", () => {});
    await waitFor(
      "the pod to see its client leave",
      () => stack.sims[0]!.stats().aborted === before.aborted + 1,
    );
    await assertNothingLeft(stack);
    assert.equal(stack.sims[0]!.stats().completed, before.completed, "the stream never finished upstream");
    await waitFor("the request line", () => log.records().some((r) => r.client_gone === true));
  });

  test("a later call is served normally", async () => {
    stack.sims[0]!.setProfile({ serviceMs: 1, tokensPerSecond: 0, defaultOutputTokens: 4 });
    const a = await chat(stack.url, "m");
    assert.equal(a.status, 200);
    assert.equal((await call(stack.url, "/healthz")).status, 200);
    await assertNothingLeft(stack);
  });
});
