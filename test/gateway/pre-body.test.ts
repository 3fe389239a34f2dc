/**
 * DESIGN §3.1 step 2: past the gateway, key or lane bound a request is refused before one byte
 * of its body is read — a complete 429 with `Connection: close`, never a reset, and with
 * `Expect: 100-continue` the 429 takes the place of the `100 Continue`.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  assertBadInput,
  assertNothingLeft,
  assertRefusal,
  chat,
  closedWithin,
  completeAnswer,
  held,
  model,
  parseRaw,
  rawConnect,
  type Stack,
  SUITE,
  startStack,
  waitFor,
} from "./helpers.js";

/** Headers of an upload that never comes: 50 MB declared, no body sent. */
function hugeUploadHead(extra = ""): string {
  return (
    "POST /v1/chat/completions HTTP/1.1\r\n" +
    "Host: sluice.test\r\n" +
    "Content-Type: application/json\r\n" +
    "Content-Length: 50000000\r\n" +
    extra +
    "\r\n"
  );
}

describe("pre-body admission on a full lane", SUITE, () => {
  let stack: Stack;
  let hold: AbortController;
  let holding: Promise<unknown>;

  before(async () => {
    // One pod that serves one call at a time, slowly; the lane queues nothing.
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: 60_000 }],
      config: ([pod]) => ({
        admission: { max_body_bytes: "100MiB", max_buffered_bytes: "200MiB" },
        models: [model("m", [pod!])],
      }),
    });
  });
  after(() => stack.close());

  test("a call holds the lane's only slot", async () => {
    hold = new AbortController();
    holding = held(stack.url, "m", hold.signal);
    await waitFor("the held call to run on the sim", () => stack.sims[0]!.stats().running === 1);
    assert.equal(stack.gateway.governor.snapshot().lanes[0]!.inflight, 1);
  });

  test("answers a complete 429 with Connection: close to headers whose body never comes", async () => {
    const before = stack.sims[0]!.stats();
    const raw = await rawConnect(stack.port, hugeUploadHead("X-Sluice-Model: m\r\n"));
    await waitFor("a complete answer", () => completeAnswer(raw.received()));
    const answer = parseRaw(raw.received());
    assert.equal(answer.status, 429);
    assert.equal(answer.headers.connection, "close");
    const e = assertRefusal(
      { status: answer.status, headers: answer.headers, text: answer.body },
      429,
      "queue_full",
    );
    assert.equal(e.lane, "m");
    assert.equal(answer.headers["x-sluice-lane"], "m");
    assert.deepEqual(
      [
        answer.headers["x-sluice-inflight"],
        answer.headers["x-sluice-queued"],
        answer.headers["x-sluice-width"],
      ],
      ["1", "0", "1"],
    );
    // Bytes the client sends after the refusal are dropped, not forwarded.
    raw.socket.write(Buffer.alloc(64 * 1024, 0x20));
    // Our FIN comes after the answer (half-close), so the client can read it.
    assert.ok(await closedWithin(raw, 3000), "the server ended the connection after the 429");
    raw.socket.destroy();
    const after = stack.sims[0]!.stats();
    assert.equal(after.bodyBytesReceived, before.bodyBytesReceived);
    assert.equal(after.received, before.received, "nothing reached the upstream");
  });

  test("with Expect: 100-continue the 429 replaces the 100 Continue", async () => {
    const raw = await rawConnect(stack.port, hugeUploadHead("X-Sluice-Model: m\r\nExpect: 100-continue\r\n"));
    const text = await raw.waitFor(/\r\n/);
    assert.match(text, /^HTTP\/1\.1 429 /, "the first status line is the refusal");
    await waitFor("a complete answer", () => completeAnswer(raw.received()));
    assert.doesNotMatch(raw.received(), /100 Continue/);
    assert.equal(parseRaw(raw.received()).headers.connection, "close");
    raw.socket.destroy();
  });

  test("releasing the held call leaves nothing counted and nothing read upstream", async () => {
    hold.abort();
    await holding;
    await assertNothingLeft(stack);
    // Only the held call's small body ever reached the sim.
    assert.equal(stack.sims[0]!.stats().received, 1);
  });
});

describe("pre-body admission on the gateway-wide bound", SUITE, () => {
  let stack: Stack;

  before(async () => {
    // admission: 1 in flight + 1 waiting in the whole gateway.
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: 60_000 }],
      config: ([pod]) => ({
        admission: {
          max_concurrency: 1,
          max_queued: 1,
          max_body_bytes: "100MiB",
          max_buffered_bytes: "200MiB",
        },
        models: [model("m", [pod!], { queue_limit: 4 })],
      }),
    });
  });
  after(() => stack.close());

  test("refuses the third call before its body even when its model is not named in a header", async () => {
    const hold = new AbortController();
    const first = held(stack.url, "m", hold.signal, "one");
    await waitFor("one call running", () => stack.sims[0]!.stats().running === 1);
    const second = held(stack.url, "m", hold.signal, "two");
    await waitFor("one call queued", () => stack.gateway.governor.snapshot().lanes[0]!.queued === 1);

    const raw = await rawConnect(stack.port, hugeUploadHead());
    await waitFor("a complete answer", () => completeAnswer(raw.received()));
    const answer = parseRaw(raw.received());
    assert.equal(answer.headers.connection, "close");
    const e = assertRefusal(
      { status: answer.status, headers: answer.headers, text: answer.body },
      429,
      "queue_full",
    );
    assert.equal(e.lane, "gateway");
    assert.deepEqual(
      [
        answer.headers["x-sluice-inflight"],
        answer.headers["x-sluice-queued"],
        answer.headers["x-sluice-queue-limit"],
        answer.headers["x-sluice-width"],
      ],
      ["1", "1", "1", "1"],
    );
    raw.socket.destroy();

    // The same bound holds for an ordinary JSON call.
    const third = await chat(stack.url, "m");
    assertRefusal(third, 429, "queue_full");
    // A bad class is bad input, answered before the bound is even looked at.
    const bad = await chat(stack.url, "m", { headers: { "x-sluice-priority": "urgent" } });
    assert.equal(assertBadInput(bad, 400, "bad_request").param, "header:x-sluice-priority");

    hold.abort();
    await Promise.all([first, second]);
    await assertNothingLeft(stack);
    assert.equal(stack.sims[0]!.stats().received, 1, "only the first call reached the pod");
    assert.equal(stack.sims[0]!.stats().bodyBytesReceived > 0, true);
  });
});

describe("Expect: 100-continue when admitted", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: 1, tokensPerSecond: 0 }],
      config: ([pod]) => ({ models: [model("m", [pod!])] }),
    });
  });
  after(() => stack.close());

  test("sends 100 Continue, then reads the body and answers 200", async () => {
    const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "continue" }] });
    const raw = await rawConnect(
      stack.port,
      "POST /v1/chat/completions HTTP/1.1\r\nHost: sluice.test\r\nContent-Type: application/json\r\n" +
        `X-Sluice-Model: m\r\nExpect: 100-continue\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
    );
    const first = await raw.waitFor(/\r\n\r\n/);
    assert.match(first, /^HTTP\/1\.1 100 Continue\r\n/);
    assert.equal(stack.sims[0]!.stats().bodyBytesReceived, 0, "no body was sent yet");
    raw.socket.write(body);
    await waitFor("a complete answer", () => completeAnswer(raw.received()));
    const final = raw.received().slice(first.length);
    const answer = parseRaw(final);
    assert.equal(answer.status, 200);
    assert.equal(JSON.parse(answer.body).object, "chat.completion");
    assert.equal(answer.headers["x-sluice-lane"], "m");
    assert.equal(stack.sims[0]!.stats().bodyBytesReceived, Buffer.byteLength(body));
    raw.socket.destroy();
    await assertNothingLeft(stack);
  });

  test("refuses with 429 instead of 100 Continue once the lane is full", async () => {
    stack.sims[0]!.setProfile({ serviceMs: 60_000 });
    const hold = new AbortController();
    const holding = held(stack.url, "m", hold.signal);
    await waitFor("the held call to run", () => stack.sims[0]!.stats().running === 1);
    const received = stack.sims[0]!.stats().received;
    const raw = await rawConnect(
      stack.port,
      "POST /v1/chat/completions HTTP/1.1\r\nHost: sluice.test\r\nContent-Type: application/json\r\n" +
        "X-Sluice-Model: m\r\nExpect: 100-continue\r\nContent-Length: 20\r\n\r\n",
    );
    const line = await raw.waitFor(/\r\n/);
    assert.match(line, /^HTTP\/1\.1 429 /);
    raw.socket.destroy();
    hold.abort();
    await holding;
    await assertNothingLeft(stack);
    assert.equal(stack.sims[0]!.stats().received, received);
  });
});
