/**
 * Retry storms (issue 13, src/gateway/pacing.ts): while the loop is saturated, a client that
 * retries on its connection before the Retry-After it was given gets the same refusal once that
 * Retry-After has passed; a client on another connection is answered meanwhile. Saturation is
 * forced here (`setLoopSaturation`), so the tests do not depend on how busy the machine is.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { IMMEDIATE_MS, setImmediateMs, setLoopSaturation } from "../../src/gateway/pacing.js";
import {
  assertNothingLeft,
  call,
  chatBody,
  completeAnswer,
  delay,
  held,
  LogCapture,
  model,
  parseRaw,
  type RawExchange,
  rawConnect,
  type Stack,
  SUITE,
  startStack,
  waitFor,
} from "./helpers.js";

/** One keep-alive chat request for `lane`, as raw bytes; another `prompt` makes another request. */
function request(lane: string, prompt = "hello"): string {
  const body = chatBody(lane, prompt);
  return `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** `sluice_refusals_total{lane="full",reason="queue_full"}` now. */
async function refusals(stack: Stack): Promise<number> {
  const text = (await call(stack.url, "/metrics")).text;
  const line = text
    .split("\n")
    .find((l) => l.startsWith('sluice_refusals_total{lane="full",reason="queue_full"} '));
  return Number(line?.split(" ")[1] ?? 0);
}

/** Waits for the next whole answer on `raw` after the first `from` characters; returns it parsed. */
async function answerAfter(raw: RawExchange, from: number, timeoutMs = 5000) {
  await waitFor("a whole answer", () => completeAnswer(raw.received().slice(from)), timeoutMs);
  return { ...parseRaw(raw.received().slice(from)), end: raw.received().length };
}

describe("retry storms: early retries while the loop is saturated", SUITE, () => {
  let stack: Stack;
  const log = new LogCapture();
  let restore: ReturnType<typeof setLoopSaturation>;
  const hold = new AbortController();

  before(async () => {
    restore = setLoopSaturation(() => true);
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: 60_000 }],
      // One slot, no queue: every call but the held one is refused queue_full.
      config: ([pod]) => ({ models: [model("full", [pod!])] }),
      logger: pino({ level: "info" }, log.stream),
    });
    void held(stack.url, "full", hold.signal);
    await waitFor("the held call to run", () => stack.sims[0]!.stats().running === 1);
  });
  after(async () => {
    setLoopSaturation(restore);
    hold.abort();
    await stack.close();
  });

  test("a retry sent at once gets the same refusal after its Retry-After; another client is answered meanwhile", async () => {
    const a = await rawConnect(stack.port, request("full"));
    const first = await answerAfter(a, 0);
    assert.equal(first.status, 429);
    assert.equal(first.headers["x-sluice-reason"], "queue_full");
    assert.ok(Number(first.headers["retry-after-ms"]) >= 1000);

    a.socket.write(request("full")); // ignores Retry-After
    const b = await rawConnect(stack.port, request("full"));
    const other = await answerAfter(b, 0);
    assert.equal(other.status, 429, "a client on another connection is refused at once");
    assert.equal(a.received().length, first.end, "the early retry is not answered yet");

    const second = await answerAfter(a, first.end);
    assert.equal(second.status, 429);
    assert.equal(second.headers["x-sluice-reason"], "queue_full");
    assert.equal(second.headers.connection, "keep-alive", "the connection stays open");
    const error = (JSON.parse(second.body) as { error: Record<string, unknown> }).error;
    assert.equal(error.code, "queue_full");
    assert.equal(error.retry_after_ms, Number(second.headers["retry-after-ms"]));
    a.socket.destroy();
    b.socket.destroy();
  });

  test("a pooled client's next call on a refused connection is not a retry: it is answered at once", async () => {
    const a = await rawConnect(stack.port, request("full", "page 1"));
    const first = await answerAfter(a, 0);
    assert.equal(first.status, 429);
    const sentAt = performance.now();
    a.socket.write(request("full", "page 12")); // the next call, before Retry-After
    const next = await answerAfter(a, first.end);
    const tookMs = performance.now() - sentAt;
    assert.equal(next.status, 429);
    // Held, it would come at the first refusal's Retry-After (≥ 1 s after it was sent).
    assert.ok(tookMs < Number(first.headers["retry-after-ms"]) / 2, `answered after ${tookMs.toFixed(0)} ms`);
    a.socket.write(request("full", "page 12")); // now the same request again: a retry
    await delay(100);
    assert.equal(a.received().length, next.end, "the retry is held");
    const third = await answerAfter(a, next.end);
    assert.equal(third.status, 429);
    a.socket.destroy();
  });

  test("a client that leaves while its refusal is held gets nothing, and nothing stays counted", async () => {
    const a = await rawConnect(stack.port, request("full"));
    const first = await answerAfter(a, 0);
    assert.equal(first.status, 429);
    const settled = () => log.records().filter((r) => r.msg === "request").length;
    const before = settled();
    const decided = await refusals(stack);
    a.socket.write(request("full"));
    // The early retry is decided (and counted) before the client leaves.
    for (let i = 0; i < 300 && (await refusals(stack)) === decided; i++) await delay(10);
    assert.equal(await refusals(stack), decided + 1, "the early retry was refused and counted");
    a.socket.destroy();
    await waitFor("the held request to settle", () => settled() > before);
    const line = log
      .records()
      .filter((r) => r.msg === "request")
      .at(-1)!;
    assert.equal(line.outcome, "client_gone");
    assert.equal(stack.gateway.governor.admitted, 1, "only the held call is admitted");
    hold.abort();
    await assertNothingLeft(stack);
  });
});

/** Answers complete in `text` (each refusal has a Content-Length body). */
function answersIn(text: string): number {
  let n = 0;
  let rest = text;
  for (;;) {
    const head = rest.indexOf("\r\n\r\n");
    if (head < 0) return n;
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(rest.slice(0, head))?.[1] ?? Number.NaN);
    if (!Number.isFinite(length) || Buffer.byteLength(rest.slice(head + 4), "latin1") < length) return n;
    n++;
    rest = rest.slice(head + 4 + length);
  }
}

describe("retry storms: a retry sent at once is held while the loop keeps up (issue 26)", SUITE, () => {
  let stack: Stack;
  let restore: ReturnType<typeof setLoopSaturation>;
  const hold = new AbortController();

  before(async () => {
    // Never saturated: only a retry that comes back at once is held.
    restore = setLoopSaturation(() => false);
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: 60_000 }],
      config: ([pod]) => ({ models: [model("full", [pod!])] }),
    });
    void held(stack.url, "full", hold.signal);
    await waitFor("the held call to run", () => stack.sims[0]!.stats().running === 1);
  });
  after(async () => {
    setLoopSaturation(restore);
    setImmediateMs(IMMEDIATE_MS);
    hold.abort();
    await stack.close();
  });

  test("a connection re-sending the moment each answer arrives (wrk) gets one refusal per Retry-After", async () => {
    // "At once" on a loaded test machine: this process is client and gateway, and its loop may
    // come round late; the rule's own threshold is what the unit tests check.
    setImmediateMs(250);
    const decided = await refusals(stack);
    const a = await rawConnect(stack.port);
    let answered = 0;
    // Re-send the same request the moment an answer is complete, as wrk does.
    a.socket.on("data", () => {
      const n = answersIn(a.received());
      if (n > answered) {
        answered = n;
        a.socket.write(request("full"));
      }
    });
    a.socket.write(request("full"));
    await waitFor("the first refusal", () => answered === 1);
    const first = parseRaw(a.received());
    assert.equal(first.status, 429);
    assert.ok(Number(first.headers["retry-after-ms"]) >= 1000);
    // Unpaced, the loop answers this connection hundreds of times in the next 600 ms.
    await delay(600);
    assert.equal(answered, 1, "the retry sent at once is held until the Retry-After");
    assert.equal(await refusals(stack), decided + 2, "refused twice: the first call and its held retry");
    assert.equal(stack.sims[0]!.stats().received, 1, "the pod saw only the call that holds its slot");
    await waitFor("the held refusal", () => answered === 2, 3000);
    assert.equal(parseRaw(a.received().slice(a.received().indexOf("HTTP/1.1", 10))).status, 429);
    a.socket.destroy();
    setImmediateMs(IMMEDIATE_MS);
  });

  test("a client that waits before its retry is refused at once while the loop keeps up", async () => {
    const a = await rawConnect(stack.port, request("full"));
    const first = await answerAfter(a, 0);
    assert.equal(first.status, 429);
    await delay(5 * IMMEDIATE_MS); // a backoff, short of the Retry-After
    const sentAt = performance.now();
    a.socket.write(request("full"));
    const next = await answerAfter(a, first.end);
    const tookMs = performance.now() - sentAt;
    assert.equal(next.status, 429);
    // Held, it would come at the first refusal's Retry-After (≥ 900 ms after it was sent).
    assert.ok(tookMs < Number(first.headers["retry-after-ms"]) / 2, `answered after ${tookMs.toFixed(0)} ms`);
    a.socket.destroy();
  });
});
