/**
 * Slow senders (slowloris): a client that sends its headers or its body slower than
 * `header_timeout_s` / `body_timeout_s` allow loses the connection (408 or a close) within a
 * bound, and holds nothing counted while it dawdles.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import {
  assertNothingLeft,
  closedWithin,
  model,
  type RawExchange,
  rawConnect,
  type Stack,
  SUITE,
  startStack,
} from "./helpers.js";

const HEADER_TIMEOUT_S = 0.3;
const BODY_TIMEOUT_S = 0.3;
/** How long the server may take to act on a timeout: a bound for the test, not a promise of sluice. */
const BOUND_MS = 1500;

/** Writes `text` one byte at a time, `gapMs` apart, until done or the server closes. */
async function trickle(raw: RawExchange, text: string, gapMs: number): Promise<void> {
  for (const ch of text) {
    if (raw.isClosed() || raw.socket.destroyed) return;
    raw.socket.write(ch);
    await delay(gapMs);
  }
}

// The two cases are independent and mostly wait: run them side by side.
describe("slow senders", { ...SUITE, concurrency: true }, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: 1 }],
      config: ([pod]) => ({
        admission: { header_timeout_s: HEADER_TIMEOUT_S, body_timeout_s: BODY_TIMEOUT_S },
        models: [model("m", [pod!])],
      }),
    });
  });
  after(() => stack.close());

  // node:http checks headersTimeout/requestTimeout only every connectionsCheckingInterval
  // (default 30 s), which the gateway's createServer() does not set.
  test("headers sent a byte at a time past header_timeout_s lose the connection", async () => {
    const raw = await rawConnect(stack.port);
    const head =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: sluice.test\r\nContent-Type: application/json\r\n" +
      "X-Sluice-Model: m\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    // Each byte well inside the timeout, the whole head far beyond it.
    void trickle(raw, head, 50);
    const closed = await closedWithin(raw, BOUND_MS);
    raw.socket.destroy();
    assert.ok(closed, `the connection was still open ${BOUND_MS} ms later`);
    if (raw.received() !== "") assert.match(raw.received(), /^HTTP\/1\.1 408 /);
    assert.equal(stack.sims[0]!.stats().received, 0);
    await assertNothingLeft(stack);
  });

  test("a body trickled past body_timeout_s loses the connection and leaves nothing counted", async () => {
    const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "slowly now" }] });
    const raw = await rawConnect(
      stack.port,
      "POST /v1/chat/completions HTTP/1.1\r\nHost: sluice.test\r\nContent-Type: application/json\r\n" +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
    );
    void trickle(raw, body, 50);
    const closed = await closedWithin(raw, BOUND_MS);
    raw.socket.destroy();
    assert.ok(closed, `the connection was still open ${BOUND_MS} ms later`);
    assert.equal(stack.sims[0]!.stats().received, 0);
    await assertNothingLeft(stack);
  });
});
