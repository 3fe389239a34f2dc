/**
 * A compressed request body (`Content-Encoding: gzip`) cannot be read, so wherever sluice must read
 * a body it is refused 415 naming the header: counted by its size, 1 MB of prompt gzipped to a few
 * KB was estimated at a few thousand tokens on a `tpm` lane, and under `X-Sluice-Model` a body
 * naming another model went to the pod unchecked. Counted at the pods: a refused body never reaches
 * one; a route's body on a lane without a token budget (never read) still streams through.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { assertBadInput, call, model, type Stack, SUITE, startStack } from "./helpers.js";
import { answerOk, type RawPod, startRawPod } from "./raw-pod.js";

describe("compressed request bodies", SUITE, () => {
  let pods: RawPod[];
  let stack: Stack;

  before(async () => {
    // The OCR pod answers whatever bytes it got (answerOk reads a JSON body).
    const pages = startRawPod((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"pages":1}');
    });
    pods = await Promise.all([startRawPod(answerOk), startRawPod(answerOk), pages]);
    const [metered, plain, ocr] = pods.map((p) => p.url);
    stack = await startStack({
      sims: [],
      config: () => ({
        routes: [{ match: "/ocr/", model: "ocr" }],
        models: [
          model("metered", [metered!], { tpm: 100_000 }),
          model("small", [plain!], {}, 8),
          model("big", [plain!], { max_concurrent_requests: 1 }, 8),
          model("ocr", [ocr!]),
        ],
      }),
    });
  });
  after(async () => {
    await stack.close();
    await Promise.all(pods.map((p) => p.close()));
  });

  const gzipped = (model: string, content: string) =>
    gzipSync(Buffer.from(JSON.stringify({ model, messages: [{ role: "user", content }] })));
  const send = (path: string, body: Buffer, headers: Record<string, string> = {}) =>
    call(stack.url, path, {
      body,
      headers: { "content-type": "application/json", "content-encoding": "gzip", ...headers },
    });

  test("on a token budget's path: 415 naming Content-Encoding, nothing reaches the provider", async () => {
    // ~240,000 tokens of prompt in a few KB: by its size it would reserve two thousand at most.
    const body = gzipped("metered", "lorem ipsum ".repeat(80_000));
    assert.ok(body.length < 8 * 1024);
    for (const headers of [{}, { "x-sluice-model": "metered" }] as Record<string, string>[]) {
      const a = await send("/v1/chat/completions", body, headers);
      const e = assertBadInput(a, 415, "unsupported_media_type");
      assert.equal(e.param, "header:content-encoding");
      assert.match(String(e.message), /token budget|model is read/);
    }
    assert.equal(pods[0]!.calls.length, 0);
  });

  test("under X-Sluice-Model on a lane without a budget: 415, so a body naming another model cannot pass", async () => {
    const a = await send("/v1/chat/completions", gzipped("big", "hi"), { "x-sluice-model": "small" });
    assertBadInput(a, 415, "unsupported_media_type");
    assert.equal(pods[1]!.calls.length, 0, "the pod ran a call whose model nobody checked");
  });

  test("a route's body on a lane without a token budget is never read: it streams through as sent", async () => {
    const body = gzipSync(Buffer.from("page bytes"));
    const a = await send("/ocr/v1/pages", body, { "content-type": "application/octet-stream" });
    assert.equal(a.status, 200, a.text);
    assert.equal(pods[2]!.calls.length, 1);
    assert.equal(pods[2]!.calls[0]!.headers["content-encoding"], "gzip");
  });
});
