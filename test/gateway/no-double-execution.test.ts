/**
 * Issue 8 item 2: a call is sent again only when the pod provably never started it — the
 * connection was refused, or the pod answered a status its config lists as "not started"
 * (`redispatch_statuses`, issue 21). A pod that took the whole
 * request and then dropped the connection may have run it: the call ends in 502 and is never sent
 * to another pod. Counted at the pods by the per-call id the gateway sends upstream
 * (`X-Sluice-Request-Id`, the same id as on the client's answer).
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import {
  assertNothingLeft,
  call,
  chat,
  chatBody,
  errorOf,
  model,
  redispatchOn,
  type Stack,
  SUITE,
  startStack,
} from "./helpers.js";
import { answer503, answerOk, dropAfterRead, type RawPod, startRawPod } from "./raw-pod.js";

/** A long cooldown: a pod tripped during a test gets no half-open probe in it. */
const BREAKER = { breaker: { base_cooldown_s: 60, max_cooldown_s: 60 } };

let pods: RawPod[] = [];
let stack: Stack | undefined;

async function start(...behaviours: Parameters<typeof startRawPod>[0][]): Promise<Stack> {
  pods = await Promise.all(behaviours.map((b) => startRawPod(b)));
  stack = await startStack({
    sims: [],
    // The pods are bare servers: a 503 of theirs means they did not run the call (opt-in, issue 21;
    // test/gateway/redispatch-ingress.test.ts has the default, where no status is re-sent).
    config: () => ({
      models: [
        redispatchOn(
          [503],
          model(
            "m",
            pods.map((p) => p.url),
            BREAKER,
            2,
          ),
        ),
      ],
    }),
  });
  return stack;
}

/** How many times each per-call id reached any pod. */
function reached(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const pod of pods) for (const id of pod.ids()) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}

const breakerOf = (s: Stack, pod: RawPod) =>
  s.gateway.governor.snapshot().pods.find((p) => p.id === pod.url)?.breaker;

afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await Promise.all(pods.map((p) => p.close()));
  pods = [];
});

describe("a call the pod may have run is never sent again", SUITE, () => {
  test("a pod that read the whole request and dropped the connection: 502, and no other pod sees the call", async () => {
    const s = await start(dropAfterRead, answerOk);
    const [dropping, healthy] = pods as [RawPod, RawPod];
    const first = await chat(s.url, "m", { content: "first" });
    assert.equal(first.status, 502, first.text);
    assert.equal(errorOf(first.text).code, "upstream_error");
    const id = String(first.headers["x-sluice-request-id"]);
    assert.deepEqual(dropping.ids(), [id], "the call reached the dropping pod, under the answer's id");
    assert.deepEqual(healthy.ids(), [], "and was not re-sent to the healthy pod");
    assert.equal(breakerOf(s, dropping), "open", "the drop counts for the breaker");

    // Later calls go to the healthy pod, each exactly once.
    for (let i = 0; i < 5; i++) assert.equal((await chat(s.url, "m", { content: `later ${i}` })).status, 200);
    assert.equal(healthy.ids().length, 5);
    for (const [callId, n] of reached()) assert.equal(n, 1, `call ${callId} reached the pods ${n} times`);
    await assertNothingLeft(s);
  });

  test("a poison request that kills every pod it reaches reaches one pod, once", async () => {
    const s = await start(dropAfterRead, dropAfterRead, dropAfterRead);
    const a = await call(s.url, "/v1/chat/completions", { body: chatBody("m", "poison") });
    assert.equal(a.status, 502, a.text);
    assert.equal(
      pods.reduce((n, p) => n + p.calls.length, 0),
      1,
      "one upstream attempt in all",
    );
    await assertNothingLeft(s);
  });

  test("a pod that dies mid-stream: the stream is cut and the call is not re-sent", async () => {
    const s = await start((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write('data: {"choices":[{"delta":{"content":"par"}}]}\n\n', () => res.socket?.destroy());
    }, answerOk);
    const a = await chat(s.url, "m", { content: "stream", extra: { stream: true } }).catch((e: unknown) => e);
    assert.ok(a instanceof Error, `the client sees the answer cut short, got ${JSON.stringify(a)}`);
    assert.equal(pods[0]!.calls.length, 1);
    assert.equal(pods[1]!.calls.length, 0, "nothing re-sent to the other pod");
    await assertNothingLeft(s);
  });
});

describe("a call the pod provably never started goes to another pod, once", SUITE, () => {
  test("connection refused: the call runs once, on the pod that accepted it", async () => {
    const s = await start(answerOk, answerOk);
    await pods[0]!.close(); // its port now refuses connections
    for (let i = 0; i < 4; i++) {
      const a = await chat(s.url, "m", { content: `call ${i}` });
      assert.equal(a.status, 200, a.text);
      assert.ok(pods[1]!.ids().includes(String(a.headers["x-sluice-request-id"])));
    }
    assert.equal(pods[1]!.calls.length, 4);
    for (const [callId, n] of reached()) assert.equal(n, 1, `call ${callId} reached the pods ${n} times`);
    await assertNothingLeft(s);
  });

  test("the pod's own 503: re-sent to the other pod, which is the only one to run it", async () => {
    const s = await start(answer503, answerOk);
    const a = await chat(s.url, "m", { content: "overloaded first" });
    assert.equal(a.status, 200, a.text);
    const id = String(a.headers["x-sluice-request-id"]);
    assert.deepEqual(pods[0]!.ids(), [id], "the overloaded pod refused it");
    assert.deepEqual(pods[1]!.ids(), [id], "the other pod ran it");
    await assertNothingLeft(s);
  });
});
