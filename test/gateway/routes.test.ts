/**
 * DESIGN §3.3: configured path prefixes proxy non-OpenAI APIs (any method, body streamed
 * through untouched, admitted before the body), and the gateway's own routes: liveness,
 * readiness, Prometheus metrics and the telemetry snapshot, as JSON and as Server-Sent Events.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { request } from "undici";
import {
  assertNothingLeft,
  assertRefusal,
  call,
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

describe("routes: a path prefix proxied to a model", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      // The sim answers its echo prefix with {"pages":1,"bytes":N}: an OCR pod.
      sims: [
        { maxNumSeqs: 1, serviceMs: 1, echoPrefix: "/ocr/" },
        { maxNumSeqs: 1, serviceMs: 60_000 },
      ],
      config: ([ocr, chatPod]) => ({
        admission: { max_body_bytes: "2MiB" },
        models: [model("ocr", [ocr!]), model("m", [chatPod!])],
        routes: [{ match: "/ocr/", model: "ocr" }],
      }),
    });
  });
  after(() => stack.close());

  for (const method of ["POST", "PUT"] as const) {
    test(`${method}: the body reaches the pod untouched, whatever its type`, async () => {
      const page = randomBytes(256 * 1024);
      const before = stack.sims[0]!.stats().bodyBytesReceived;
      const a = await call(stack.url, "/ocr/v2/pages?lang=de", {
        method,
        body: page,
        headers: { "content-type": "image/png" },
      });
      assert.equal(a.status, 200, a.text);
      assert.deepEqual(JSON.parse(a.text), { pages: 1, bytes: page.length });
      assert.equal(stack.sims[0]!.stats().bodyBytesReceived - before, page.length);
      assert.equal(a.headers["x-sluice-lane"], "ocr");
      assert.match(String(a.headers["x-sluice-request-id"]), /^[0-9a-f-]{36}$/);
      await assertNothingLeft(stack);
    });
  }

  test("GET and DELETE are carried too", async () => {
    for (const method of ["GET", "DELETE"] as const) {
      const a = await call(stack.url, "/ocr/jobs/7", { method });
      assert.equal(a.status, 200, `${method}: ${a.text}`);
      assert.deepEqual(JSON.parse(a.text), { pages: 1, bytes: 0 });
    }
    await assertNothingLeft(stack);
  });

  test("a chunked upload is streamed through as it arrives", async () => {
    const parts = [randomBytes(70_000), randomBytes(50_000), randomBytes(1)];
    const res = await request(`${stack.url}/ocr/page`, {
      method: "POST",
      headers: { "content-type": "application/pdf" },
      body: Readable.from(parts),
      dispatcher: stack.agent,
    });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(await res.body.json(), { pages: 1, bytes: 120_001 });
    await assertNothingLeft(stack);
  });

  test("a full route lane refuses an upload before reading it", async () => {
    stack.sims[0]!.setProfile({ serviceMs: 60_000 });
    const hold = new AbortController();
    const holding = request(`${stack.url}/ocr/slow`, {
      method: "POST",
      body: "x",
      signal: hold.signal,
      dispatcher: stack.agent,
    }).catch((e: unknown) => e);
    await waitFor("the held upload to run", () => stack.sims[0]!.stats().running === 1);
    const bytes = stack.sims[0]!.stats().bodyBytesReceived;
    const raw = await rawConnect(
      stack.port,
      "PUT /ocr/big HTTP/1.1\r\nHost: sluice.test\r\nContent-Type: image/tiff\r\nContent-Length: 50000000\r\n\r\n",
    );
    await waitFor("a complete answer", () => completeAnswer(raw.received()));
    const answer = parseRaw(raw.received());
    raw.socket.destroy();
    assert.equal(answer.headers.connection, "close");
    const e = assertRefusal(
      { status: answer.status, headers: answer.headers, text: answer.body },
      429,
      "queue_full",
    );
    assert.equal(e.lane, "ocr");
    assert.equal(stack.sims[0]!.stats().bodyBytesReceived, bytes, "no byte of the upload was read");
    hold.abort();
    await holding;
    stack.sims[0]!.setProfile({ serviceMs: 1 });
    await assertNothingLeft(stack);
  });
});

describe("the gateway's own routes", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: 60_000 }],
      config: ([pod]) => ({ models: [model("m", [pod!])] }),
    });
  });
  after(() => stack.close());

  test("GET /healthz answers 200", async () => {
    const a = await call(stack.url, "/healthz");
    assert.equal(a.status, 200);
    assert.deepEqual(JSON.parse(a.text), { ok: true });
  });

  test("GET /readyz answers 200 while a pod is usable", async () => {
    const a = await call(stack.url, "/readyz");
    assert.equal(a.status, 200);
    assert.equal(JSON.parse(a.text).ready, true);
  });

  test("/metrics and /api/telemetry/lanes show a call in flight", async () => {
    const hold = new AbortController();
    const holding = held(stack.url, "m", hold.signal);
    await waitFor("the held call to run", () => stack.sims[0]!.stats().running === 1);

    const metrics = await call(stack.url, "/metrics");
    assert.equal(metrics.status, 200);
    assert.match(String(metrics.headers["content-type"]), /^text\/plain/);
    assert.match(metrics.text, /^sluice_lane_inflight\{lane="m"\} 1$/m);
    for (const name of [
      "sluice_lane_queue_depth",
      "sluice_pod_width",
      "sluice_pod_inflight",
      "sluice_refusals_total",
    ]) {
      assert.match(metrics.text, new RegExp(`^# TYPE ${name} `, "m"), `${name} is exported`);
    }

    const lanes = await call(stack.url, "/api/telemetry/lanes");
    assert.equal(lanes.status, 200);
    const snapshot = JSON.parse(lanes.text);
    assert.equal(snapshot.enabled, true);
    assert.equal(snapshot.lanes[0].lane, "m");
    assert.equal(snapshot.lanes[0].inflight, 1);
    assert.equal(snapshot.pods[0].id, stack.sims[0]!.url);
    assert.equal(snapshot.pods[0].inflight, 1);

    hold.abort();
    await holding;
    await assertNothingLeft(stack);
    assert.match((await call(stack.url, "/metrics")).text, /^sluice_lane_inflight\{lane="m"\} 0$/m);
  });

  test("GET /api/telemetry/stream sends the snapshot as a first SSE event at once", async () => {
    const stop = new AbortController();
    const res = await request(`${stack.url}/api/telemetry/stream`, {
      signal: stop.signal,
      dispatcher: stack.agent,
    });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /^text\/event-stream/);
    let text = "";
    res.body.setEncoding("utf8");
    res.body.on("error", () => {});
    await new Promise<void>((resolve) => {
      res.body.on("data", (chunk: string) => {
        text += chunk;
        if (text.includes("\n\n")) resolve();
      });
    });
    stop.abort();
    const event = text.slice(0, text.indexOf("\n\n"));
    assert.match(event, /^data: /);
    const snapshot = JSON.parse(event.slice("data: ".length));
    assert.equal(snapshot.lanes[0].lane, "m");
    assert.equal(typeof snapshot.generated_at, "string");
  });

  test("an unknown path is 404 and a POST to an admin route is 405", async () => {
    const missing = await call(stack.url, "/nope");
    assert.equal(missing.status, 404);
    assert.equal(JSON.parse(missing.text).error.code, "not_found");
    const post = await call(stack.url, "/metrics", { method: "POST", body: "{}" });
    assert.equal(post.status, 405);
    assert.equal(stack.sims[0]!.stats().received, 1, "only the held call reached the pod");
    await assertNothingLeft(stack);
  });
});
