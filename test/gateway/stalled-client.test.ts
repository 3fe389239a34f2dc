/**
 * Issue 21 defect 8: a client that never reads its answer must not hold its slot forever. Two raw
 * clients take both slots of a lane of 2 and never read their (endless) streams, so the gateway's
 * writes to them back up; after `stream_idle_timeout_s` (1 s here) of accepting nothing, each
 * loses its call — the pod's call aborted, the client's connection closed, the slot freed,
 * `sluice_client_stalled_total` counted — and a third, normal call is served long before its
 * queue timeout. Counted at the pod: each stalled call reached it once and was aborted there.
 */
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import {
  assertNothingLeft,
  chat,
  chatBody,
  LogCapture,
  model,
  type Stack,
  startStack,
  waitFor,
} from "./helpers.js";
import { answerOk, type Behaviour, type RawPod, startRawPod } from "./raw-pod.js";

/** Streams SSE chunks for a "big" call until the gateway goes away; answers any other call small. */
const endlessStream: Behaviour = (req, res, call) => {
  if (!call.body.includes('"big"')) return answerOk(req, res, call);
  res.writeHead(200, { "content-type": "text/event-stream" });
  const chunk = Buffer.from(`data: {"choices":[{"delta":{"content":"${"x".repeat(64 * 1024)}"}}]}\n\n`);
  const pump = () => {
    while (!res.destroyed && res.write(chunk));
  };
  res.on("drain", pump);
  pump();
};

/** A client that sends its request and never reads a byte of the answer. */
async function neverReads(port: number): Promise<Socket> {
  const socket = connect({ port, host: "127.0.0.1" });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.on("error", () => {}); // the gateway resets it: expected
  const body = chatBody("m", "big", { stream: true });
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  socket.pause(); // no 'data' listener and paused: the kernel's buffers fill, then the gateway's
  return socket;
}

/** Queue timeout of the lane: the third call must be served well before it. */
const QUEUE_TIMEOUT_S = 30;

describe("a client that never reads its answer", { timeout: 60_000 }, () => {
  let pod: RawPod;
  let stack: Stack;
  const log = new LogCapture();

  before(async () => {
    pod = await startRawPod(endlessStream);
    stack = await startStack({
      sims: [],
      config: () => ({
        models: [
          model(
            "m",
            [pod.url],
            { stream_idle_timeout_s: 1, queue_limit: 4, queue_timeout_s: QUEUE_TIMEOUT_S },
            2,
          ),
        ],
      }),
      logger: pino({ level: "info" }, log.stream),
    });
  });
  after(async () => {
    await stack.close();
    await pod.close();
  });

  test("loses its call after stream_idle_timeout_s: the slot frees and a third call is served", async () => {
    const stalled = [await neverReads(stack.port), await neverReads(stack.port)];
    await waitFor("both streams to start at the pod", () => pod.calls.length === 2);
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), (QUEUE_TIMEOUT_S / 2) * 1000);
    });
    const third = await Promise.race([chat(stack.url, "m", { content: "small" }), late]);
    clearTimeout(timer);
    assert.notEqual(third, "late", `the third call waited over ${QUEUE_TIMEOUT_S / 2} s for a slot`);
    if (third === "late") return;
    assert.equal(third.status, 200, third.text);
    const waited = (performance.now() - started) / 1000;
    assert.ok(waited < QUEUE_TIMEOUT_S / 2, `served after ${waited.toFixed(1)} s`);

    // Each stalled call reached the pod once and was aborted there; their clients were cut off.
    await waitFor("the pod to see both stalled calls aborted", () => pod.aborted() === 2);
    assert.equal(pod.calls.length, 3);
    // The gateway closed their connections: once they read what was already in flight, they end.
    const ended = stalled.map((s) => new Promise<void>((resolve) => s.once("close", () => resolve())));
    for (const s of stalled) s.resume();
    await Promise.all(ended);
    const metrics = await stack.gateway.metrics.render();
    assert.match(metrics, /sluice_client_stalled_total\{lane="m"\} 2/);
    await waitFor(
      "the request lines",
      () => log.records().filter((r) => r.client_stalled === true).length === 2,
    );
    for (const line of log.records().filter((r) => r.client_stalled === true)) {
      assert.equal(line.outcome, "client_gone");
      assert.equal(line.failures, undefined, "the pod did nothing wrong: no upstream failure");
    }
    const breaker = stack.gateway.governor.snapshot().pods[0]!.breaker;
    assert.equal(breaker, "closed", "a client's stall is not the pod's");
    await assertNothingLeft(stack);
  });
});
