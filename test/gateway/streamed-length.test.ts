/**
 * Issue 26: a body the gateway streams through (its lane known before the body is read) goes to
 * the pod with the length its client declared, not re-framed as chunked. Chunked, each call cost
 * the pod a chunk parser and the gateway one more socket write (the terminating chunk's). An
 * upload the client itself sent chunked stays chunked: there is no length to give.
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
