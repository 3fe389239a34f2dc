/**
 * Issue 8 items 5 and 6: what sluice reads of a failing pod's answer is bounded, and what it
 * writes when a pod fails says a code and a plain message — never a pod address or an internal
 * error text. Those go to the request's log line.
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import { pino } from "pino";
import {
  assertNothingLeft,
  chat,
  errorOf,
  LogCapture,
  model,
  redispatchOn,
  type Stack,
  SUITE,
  startStack,
  waitFor,
} from "./helpers.js";
import { type Behaviour, dropAfterRead, type RawPod, startRawPod } from "./raw-pod.js";

const MiB = 2 ** 20;
const HUGE = 50 * MiB;

let pods: RawPod[] = [];
let stack: Stack | undefined;
let log: LogCapture;

/** One model on one pod (no other pod to re-dispatch to, no fallback). */
async function start(behave: Behaviour): Promise<{ s: Stack; pod: RawPod }> {
  const pod = await startRawPod(behave);
  pods = [pod];
  log = new LogCapture();
  stack = await startStack({
    sims: [],
    config: () => ({
      // 503 listed as "not started": an overload answer is held (bounded) while sluice decides.
      models: [
        redispatchOn([503], model("m", [pod.url], { breaker: { base_cooldown_s: 60, max_cooldown_s: 60 } })),
      ],
    }),
    logger: pino({ level: "info" }, log.stream),
  });
  return { s: stack, pod };
}

afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await Promise.all(pods.map((p) => p.close()));
  pods = [];
});

/** What no client-facing message may contain. */
const INTERNALS = /127\.0\.0\.1|localhost|http:\/\/|UND_ERR|ECONN|other side closed|undefined|socket/i;

/** The request lines logged for `id`. */
const linesOf = (id: string) => log.records().filter((r) => r.msg === "request" && r.request_id === id);

describe("an overload answer with a huge body", SUITE, () => {
  test("is read only up to a bound: the client gets its 503 and the gateway's memory does not grow by the body", async () => {
    let written = 0;
    const { s, pod } = await start((_req, res) => {
      res.writeHead(503, { "content-type": "application/json", "retry-after": "7" });
      const chunk = Buffer.alloc(64 * 1024, 0x20); // one buffer, written again and again
      const more = () => {
        while (written < HUGE && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", more);
        }
        if (!res.destroyed) res.end();
      };
      more();
    });
    const baseline = process.memoryUsage().arrayBuffers;
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    }, 2);
    const a = await chat(s.url, "m", { content: "overloaded" });
    peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    clearInterval(sampler);

    assert.ok(peak - baseline < HUGE / 2, `array buffers grew by ${peak - baseline} bytes`);
    await waitFor("the pod's answer to be cut off", () => pod.aborted() === 1);
    assert.ok(written < HUGE / 2, `the pod got to write ${written} of its ${HUGE} bytes`);
    assert.equal(a.status, 503, a.text.slice(0, 200));
    const e = errorOf(a.text);
    assert.equal(e.code, "upstream_error");
    assert.doesNotMatch(String(e.message), INTERNALS);
    assert.equal(a.headers["retry-after"], "7", "the pod's Retry-After is passed on");
    await assertNothingLeft(s);
  });
});

describe("502 bodies", SUITE, () => {
  test("a pod that dropped the call: a code and a plain message; the pod and the error text in the log", async () => {
    const { s, pod } = await start(dropAfterRead);
    const a = await chat(s.url, "m", { content: "drop" });
    assert.equal(a.status, 502);
    const e = errorOf(a.text);
    assert.equal(e.code, "upstream_error");
    assert.equal(a.headers["x-sluice-reason"], "upstream_error");
    assert.doesNotMatch(String(e.message), INTERNALS);
    assert.doesNotMatch(a.text, INTERNALS);
    const [line] = linesOf(String(a.headers["x-sluice-request-id"]));
    const failures = line?.failures as { pod: string; cause: string; detail?: string }[] | undefined;
    assert.deepEqual(
      failures?.map((f) => [f.pod, f.cause]),
      [[pod.url, "reset"]],
    );
    assert.match(String(failures?.[0]?.detail), /other side closed|ECONNRESET|UND_ERR_SOCKET/);
    await assertNothingLeft(s);
  });

  test("a pod that refuses connections: the same, with the refusal in the log", async () => {
    const { s, pod } = await start(dropAfterRead);
    await pod.close(); // its port now refuses connections
    const a = await chat(s.url, "m", { content: "refused" });
    assert.equal(a.status, 502);
    const e = errorOf(a.text);
    assert.equal(e.code, "upstream_error");
    assert.doesNotMatch(a.text, INTERNALS);
    const [line] = linesOf(String(a.headers["x-sluice-request-id"]));
    const failures = line?.failures as { pod: string; cause: string; detail?: string }[] | undefined;
    assert.deepEqual(
      failures?.map((f) => [f.pod, f.cause]),
      [[pod.url, "refused"]],
    );
    assert.match(String(failures?.[0]?.detail), /ECONNREFUSED/);
    // The pod is tripped now: the next call is refused at once, and that body names no pod either.
    const next = await chat(s.url, "m", { content: "while tripped" });
    assert.equal(next.status, 503);
    assert.equal(errorOf(next.text).code, "upstream_unavailable");
    assert.doesNotMatch(next.text, INTERNALS);
    await assertNothingLeft(s);
  });
});
