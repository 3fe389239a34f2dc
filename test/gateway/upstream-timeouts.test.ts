/**
 * Issue 8 item 4: a hung pod is caught. `upstream_timeout_s` bounds the wait for an answer's
 * headers and `stream_idle_timeout_s` the silence between its chunks; past either the pod's call
 * is aborted, the client gets 504 `upstream_timeout` (or, mid-answer, the answer is cut), the
 * breaker counts it, and the call is never sent to another pod (the pod may have run it).
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import {
  assertNothingLeft,
  call,
  chat,
  errorOf,
  model,
  redispatchOn,
  type Stack,
  SUITE,
  startStack,
  waitFor,
} from "./helpers.js";
import { answerOk, type Behaviour, neverAnswer, type RawPod, startRawPod } from "./raw-pod.js";

let pods: RawPod[] = [];
let stack: Stack | undefined;

/** A lane over pods behaving as given, the first one picked first; timeouts in seconds. */
async function start(timeouts: Record<string, number>, ...behaviours: Behaviour[]): Promise<Stack> {
  pods = await Promise.all(behaviours.map((b) => startRawPod(b)));
  stack = await startStack({
    sims: [],
    config: () => ({
      models: [
        // 503 listed as "not started": an overload head is held while sluice decides.
        redispatchOn(
          [503],
          model(
            "m",
            pods.map((p) => p.url),
            { ...timeouts, breaker: { base_cooldown_s: 60, max_cooldown_s: 60 } },
            2,
          ),
        ),
      ],
    }),
  });
  return stack;
}

afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await Promise.all(pods.map((p) => p.close()));
  pods = [];
});

const breakerOf = (s: Stack, pod: RawPod) =>
  s.gateway.governor.snapshot().pods.find((p) => p.id === pod.url)?.breaker;

/** The `sluice_upstream_failures_total` sample for a pod and cause (0 when absent). */
async function failures(s: Stack, pod: RawPod, cause: string): Promise<number> {
  const text = (await call(s.url, "/metrics")).text;
  const line = text
    .split("\n")
    .find(
      (l) =>
        l.startsWith("sluice_upstream_failures_total{") &&
        l.includes(`"${pod.url}"`) &&
        l.includes(`cause="${cause}"`),
    );
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
}

/** Answers a stream's head and first chunk, then goes silent. */
const stallMidStream: Behaviour = (_req, res) => {
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.write('data: {"choices":[{"delta":{"content":"par"}}]}\n\n');
};

describe("upstream_timeout_s", SUITE, () => {
  test("no answer within it: 504 upstream_timeout, the pod's call aborted, the breaker told, nothing re-sent", async () => {
    const s = await start({ upstream_timeout_s: 0.2 }, neverAnswer, answerOk);
    const [hung, healthy] = pods as [RawPod, RawPod];
    const a = await chat(s.url, "m", { content: "hang" });
    assert.equal(a.status, 504, a.text);
    const e = errorOf(a.text);
    assert.equal(e.code, "upstream_timeout");
    assert.equal(a.headers["x-sluice-reason"], "upstream_timeout");
    assert.doesNotMatch(String(e.message), /127\.0\.0\.1|http:|UND_ERR|undefined/);
    await waitFor("the hung pod's connection to be closed", () => hung.aborted() === 1);
    assert.deepEqual(hung.ids(), [String(a.headers["x-sluice-request-id"])]);
    assert.equal(healthy.calls.length, 0, "a call that timed out is never sent again");
    assert.equal(breakerOf(s, hung), "open", "a timeout is an overload signal for the breaker");
    assert.equal(await failures(s, hung, "timeout"), 1);
    // The lane goes on with its other pod.
    assert.equal((await chat(s.url, "m", { content: "next" })).status, 200);
    await assertNothingLeft(s);
  });
});

describe("stream_idle_timeout_s", SUITE, () => {
  test("silence mid-stream past it: the stream is cut, the pod's call aborted, the breaker told", async () => {
    const s = await start({ stream_idle_timeout_s: 0.2 }, stallMidStream, answerOk);
    const [stalled, healthy] = pods as [RawPod, RawPod];
    const a = await chat(s.url, "m", { content: "stall", extra: { stream: true } }).catch((e: unknown) => e);
    assert.ok(a instanceof Error, `the client sees its stream cut, got ${JSON.stringify(a)}`);
    await waitFor("the stalled pod's connection to be closed", () => stalled.aborted() === 1);
    assert.equal(healthy.calls.length, 0);
    assert.equal(breakerOf(s, stalled), "open");
    assert.equal(await failures(s, stalled, "timeout"), 1);
    await assertNothingLeft(s);
  });

  test("an overload head and then silence: the pod's status, its body written by sluice, its call aborted", async () => {
    const s = await start({ stream_idle_timeout_s: 0.2 }, (_req, res) => {
      res.writeHead(503, { "content-type": "application/json" }); // an overload head, held until its body ends
      res.flushHeaders();
    });
    const a = await chat(s.url, "m", { content: "half an answer" });
    // The pod said 503 and never finished saying it: its overload answer, written by sluice.
    assert.equal(a.status, 503, a.text);
    assert.equal(errorOf(a.text).code, "upstream_error");
    await waitFor("the pod's connection to be closed", () => pods[0]!.aborted() === 1);
    await assertNothingLeft(s);
  });

  test("a stream that keeps talking is not cut, however long it lasts in all", async () => {
    const GAP_MS = 100;
    const s = await start({ stream_idle_timeout_s: 0.4, upstream_timeout_s: 0.4 }, (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      let sent = 0;
      const timer = setInterval(() => {
        if (++sent === 8) {
          clearInterval(timer);
          res.end("data: [DONE]\n\n");
        } else res.write(`data: {"choices":[{"delta":{"content":"${sent}"}}]}\n\n`);
      }, GAP_MS);
      res.on("close", () => clearInterval(timer));
    });
    const started = performance.now();
    const a = await chat(s.url, "m", { content: "long", extra: { stream: true } });
    assert.equal(a.status, 200);
    assert.match(a.text, /\[DONE\]/);
    assert.ok(performance.now() - started > 400, "the whole stream outlasted the idle bound");
    await assertNothingLeft(s);
  });
});
