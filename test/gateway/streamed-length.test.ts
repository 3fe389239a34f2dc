/**
 * Issue 26: a body the gateway streams through (its lane known before the body is read) goes to
 * the pod with the length its client declared, not re-framed as chunked. Chunked, each call cost
 * the pod a chunk parser and the gateway one more socket write (the terminating chunk's). An
 * upload the client itself sent chunked stays chunked: there is no length to give. A body whose
 * bytes had all arrived is taken whole, so a re-dispatch sends it again, every byte.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  assertNothingLeft,
  completeAnswer,
  model,
  parseRaw,
  rawConnect,
  type Stack,
  SUITE,
  startStack,
  waitFor,
} from "./helpers.js";
import { type RawPod, startRawPod } from "./raw-pod.js";

describe("a streamed body upstream", SUITE, () => {
  let pod: RawPod;
  let stack: Stack;

  before(async () => {
    pod = await startRawPod((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": 11 });
      res.end('{"pages":1}');
    });
    // A lane named by X-Sluice-Model with no token budget: the body is streamed, never buffered.
    stack = await startStack({ sims: [], config: () => ({ models: [model("ocr", [pod.url])] }) });
  });
  after(async () => {
    await stack.close();
    await pod.close();
  });

  async function send(head: string[], body: string): Promise<ReturnType<typeof parseRaw>> {
    const raw = await rawConnect(stack.port, [...head, "", body].join("\r\n"));
    await waitFor("the whole answer", () => completeAnswer(raw.received()));
    raw.socket.destroy();
    return parseRaw(raw.received());
  }

  test("goes with the client's declared Content-Length, not chunked", async () => {
    const body = "page bytes ".repeat(200);
    const answer = await send(
      [
        "POST /v1/ocr HTTP/1.1",
        "Host: gateway",
        "Content-Type: application/octet-stream",
        "X-Sluice-Model: ocr",
        `Content-Length: ${Buffer.byteLength(body)}`,
      ],
      body,
    );
    assert.equal(answer.status, 200, answer.body);
    const received = pod.calls.find((c) => c.id === answer.headers["x-sluice-request-id"]);
    assert.ok(received, "the call reached the pod");
    assert.equal(received.headers["content-length"], String(Buffer.byteLength(body)));
    assert.equal(received.headers["transfer-encoding"], undefined);
    assert.equal(received.body, body, "every byte arrived");
    await assertNothingLeft(stack);
  });

  test("an upload the client sent chunked stays chunked, every byte through", async () => {
    const part = "chunk of a page ".repeat(40);
    const size = Buffer.byteLength(part).toString(16);
    const answer = await send(
      [
        "POST /v1/ocr HTTP/1.1",
        "Host: gateway",
        "Content-Type: application/octet-stream",
        "X-Sluice-Model: ocr",
        "Transfer-Encoding: chunked",
      ],
      `${size}\r\n${part}\r\n${size}\r\n${part}\r\n0\r\n\r\n`,
    );
    assert.equal(answer.status, 200, answer.body);
    const received = pod.calls.find((c) => c.id === answer.headers["x-sluice-request-id"]);
    assert.ok(received, "the call reached the pod");
    assert.equal(received.headers["content-length"], undefined);
    assert.equal(received.headers["transfer-encoding"], "chunked");
    assert.equal(received.body, part + part);
    await assertNothingLeft(stack);
  });
});

describe("a streamed body taken whole, re-dispatched", SUITE, () => {
  let gone: RawPod;
  let pod: RawPod;
  let stack: Stack;
  let releaseHeld: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    releaseHeld = resolve;
  });

  before(async () => {
    gone = await startRawPod(() => undefined);
    pod = await startRawPod((_req, res, call) => {
      const answer = () => {
        res.writeHead(200, { "content-type": "application/json", "content-length": 11 });
        res.end('{"pages":1}');
      };
      if (call.body === "hold") void held.then(answer);
      else answer();
    });
    // The first pod of `ocr` (the one an idle lane picks first) refuses connections: a call
    // never starts there. One admission slot: a call on `hold` keeps `ocr`'s call queued (its
    // bytes arrive while it waits, so it is taken whole) until the test lets it go.
    await gone.close();
    stack = await startStack({
      sims: [],
      config: () => ({
        admission: { max_concurrency: 1, max_queued: 4 },
        models: [model("hold", [pod.url]), model("ocr", [gone.url, pod.url], { queue_limit: 4 })],
      }),
    });
  });
  after(async () => {
    await stack.close();
    await pod.close();
  });

  const upload = (lane: string, body: string) =>
    [
      "POST /v1/ocr HTTP/1.1",
      "Host: gateway",
      "Content-Type: application/octet-stream",
      `X-Sluice-Model: ${lane}`,
      `Content-Length: ${Buffer.byteLength(body)}`,
      "",
      body,
    ].join("\r\n");

  test("reaches the live pod once with every byte and its length", async () => {
    const first = await rawConnect(stack.port, upload("hold", "hold"));
    await waitFor("the held call at the pod", () => pod.calls.length === 1);
    const body = "scanned page ".repeat(300);
    const raw = await rawConnect(stack.port, upload("ocr", body));
    const ocr = () => stack.gateway.governor.snapshot().lanes.find((l) => l.lane === "ocr")!;
    await waitFor("the ocr call queued", () => ocr().queued === 1);
    releaseHeld();
    await waitFor("the whole answer", () => completeAnswer(raw.received()));
    await waitFor("the held answer", () => completeAnswer(first.received()));
    raw.socket.destroy();
    first.socket.destroy();
    const answer = parseRaw(raw.received());
    assert.equal(answer.status, 200, answer.body);
    const reached = pod.calls.filter((c) => c.id === answer.headers["x-sluice-request-id"]);
    assert.equal(reached.length, 1, "one attempt reached the live pod");
    assert.equal(reached[0]!.headers["content-length"], String(Buffer.byteLength(body)));
    assert.equal(reached[0]!.body, body);
    await assertNothingLeft(stack);
  });
});
