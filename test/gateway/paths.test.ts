/**
 * Issue 8 item 6: a path's dot segments are resolved before routing, and a path that resolves
 * outside the route its prefix names is 400 `bad_request` naming it — before it reached a pod,
 * `/v1/../__stats` was forwarded as sent. What is forwarded is the resolved path. Raw sockets:
 * an HTTP client resolves dot segments itself before sending.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import {
  assertBadInput,
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

/** A pod that answers 200 `{}` to anything and records every request target it saw. */
interface RecordingPod {
  url: string;
  paths: string[];
  close(): Promise<void>;
}

async function recordingPod(): Promise<RecordingPod> {
  const paths: string[] = [];
  const server: Server = createServer((req, res) => {
    paths.push(req.url ?? "");
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json", "content-length": 2 });
      res.end("{}");
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe("request paths with dot segments", SUITE, () => {
  let stack: Stack;
  let chatPod: RecordingPod;
  let ocrPod: RecordingPod;

  before(async () => {
    [chatPod, ocrPod] = await Promise.all([recordingPod(), recordingPod()]);
    stack = await startStack({
      sims: [],
      config: () => ({
        models: [model("m", [chatPod.url]), model("ocr", [ocrPod.url])],
        routes: [{ match: "/ocr/", model: "ocr" }],
      }),
    });
  });
  after(async () => {
    await stack.close();
    await Promise.all([chatPod.close(), ocrPod.close()]);
  });

  /** Sends `method target` on a raw socket and returns the parsed answer. */
  async function send(method: string, target: string, body?: string) {
    const head =
      `${method} ${target} HTTP/1.1\r\nHost: sluice.test\r\nContent-Type: application/json\r\n` +
      `X-Sluice-Model: m\r\nContent-Length: ${Buffer.byteLength(body ?? "")}\r\n\r\n${body ?? ""}`;
    const raw = await rawConnect(stack.port, head);
    await waitFor(`an answer to ${target}`, () => completeAnswer(raw.received()));
    raw.socket.destroy();
    const a = parseRaw(raw.received());
    return { status: a.status, headers: a.headers, text: a.body };
  }

  for (const target of [
    "/v1/../__stats",
    "/v1/%2e%2e/__stats",
    "/v1/%2E%2e/__stats",
    "/v1/.%2e/metrics",
    "/v1/..%2f__stats",
    "/v1/chat/../../__stats?x=1",
    "/ocr/../v1/chat/completions",
    "/ocr/%2e%2e/__stats",
    "/healthz/../v1/chat/completions",
  ]) {
    test(`${target} is 400 bad_request naming the path, and reaches no pod`, async () => {
      const a = await send("POST", target, '{"model":"m"}');
      const e = assertBadInput(a, 400, "bad_request");
      assert.equal(e.param, "path");
      assert.ok((e.message as string).includes(JSON.stringify(target.split("?")[0])), e.message as string);
      assert.deepEqual([chatPod.paths, ocrPod.paths], [[], []], "no pod saw it");
      await assertNothingLeft(stack);
    });
  }

  test("a path that resolves within its route is forwarded resolved", async () => {
    const a = await send("POST", "/v1/embeddings/../chat/./completions?trace=1", '{"model":"m"}');
    assert.equal(a.status, 200, a.text);
    const b = await send("POST", "/ocr/pages/%2e%2e/page/7", "{}");
    assert.equal(b.status, 200, b.text);
    assert.deepEqual(chatPod.paths, ["/v1/chat/completions?trace=1"]);
    assert.deepEqual(ocrPod.paths, ["/ocr/page/7"]);
    await assertNothingLeft(stack);
  });

  test("an encoded slash in a segment is forwarded as sent", async () => {
    chatPod.paths.length = 0;
    const a = await send("POST", "/v1/files/a%2Fb", '{"model":"m"}');
    assert.equal(a.status, 200, a.text);
    assert.deepEqual(chatPod.paths, ["/v1/files/a%2Fb"]);
    await assertNothingLeft(stack);
  });
});
