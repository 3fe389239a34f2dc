/**
 * Issue 8 item 7: a call no pod of its lane started, with no pod left to try, goes to the lane's
 * `fallback` model — the first call that finds the pod dead, every call while its breaker is open,
 * and the call that makes each half-open probe — and the fallback's pod receives the fallback's own
 * model name and credentials. A call the pod may have run is never sent to the fallback.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import {
  type Answer,
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
import { answer503, answerOk, type Behaviour, dropAfterRead, type RawPod, startRawPod } from "./raw-pod.js";

const ENV = { BIG_KEY: "big-secret", SMALL_KEY: "small-secret" };

/** `big` on `bigUrl` falling back to `small` on `small`'s pod, each with its own upstream key. */
function config(bigUrl: string, small: RawPod, cooldownS: number) {
  return {
    models: [
      // big's pod is a bare server: its 503 means it did not run the call.
      redispatchOn(
        [503],
        model("big", [bigUrl], {
          fallback: "small",
          upstream_api_key_env: "BIG_KEY",
          breaker: { base_cooldown_s: cooldownS, max_cooldown_s: cooldownS },
        }),
      ),
      model("small", [small.url], { upstream_api_key_env: "SMALL_KEY" }),
    ],
  };
}

/**
 * Checks that `small`'s pod served the call whose message was `content` (the body marker), as the
 * fallback's: its name, its credentials, the answer's lane and per-call id.
 */
function assertServedBySmall(a: Answer, small: RawPod, content: string): void {
  assert.equal(a.status, 200, a.text);
  assert.equal(a.headers["x-sluice-lane"], "small");
  const received = small.calls.find((c) => JSON.parse(c.body).messages[0].content === content);
  assert.ok(received, "small's pod received the call");
  assert.equal(JSON.parse(received.body).model, "small", "under the fallback's own name");
  assert.equal(received.headers.authorization, "Bearer small-secret", "with the fallback's credentials");
  assert.equal(received.id, a.headers["x-sluice-request-id"]);
  assert.equal(JSON.parse(a.text).model, "small");
}

/** The failed upstream attempts a request line names, as [pod, cause]. */
function failuresOf(line: Record<string, unknown> | undefined): [string, string][] {
  const failures = (line?.failures ?? []) as { pod: string; cause: string }[];
  return failures.map((f) => [f.pod, f.cause]);
}

describe("a model whose only pod refuses connections, with a fallback", SUITE, () => {
  let small: RawPod;
  let deadUrl: string;
  let stack: Stack;
  const log = new LogCapture();
  const lineOf = (a: Answer) =>
    log.records().find((r) => r.msg === "request" && r.request_id === a.headers["x-sluice-request-id"]);

  before(async () => {
    small = await startRawPod(answerOk);
    const dead = await startRawPod(answerOk);
    deadUrl = dead.url;
    await dead.close(); // its port now refuses connections
    stack = await startStack({
      sims: [],
      config: () => config(deadUrl, small, 0.2),
      env: ENV,
      logger: pino({ level: "info" }, log.stream),
    });
  });
  after(async () => {
    await stack.close();
    await small.close();
  });

  test("the first call, refused by the pod, is served by the fallback", async () => {
    const a = await chat(stack.url, "big", { content: "first" });
    assertServedBySmall(a, small, "first");
    const line = lineOf(a);
    assert.deepEqual(failuresOf(line), [[deadUrl, "refused"]]);
    assert.equal(line?.lane, "small");
    assert.equal(line?.fallback_from, "big");
  });

  test("calls while its breaker is open go to the fallback under the fallback's name", async () => {
    assertServedBySmall(await chat(stack.url, "big", { content: "while open" }), small, "while open");
  });

  test("the call that makes a half-open probe, refused, is served by the fallback too", async () => {
    for (let probe = 0; probe < 2; probe++) {
      await waitFor("the breaker's cooldown to end", () => !stack.gateway.governor.isTripped(deadUrl));
      const a = await chat(stack.url, "big", { content: `probe ${probe}` });
      assertServedBySmall(a, small, `probe ${probe}`);
      assert.deepEqual(failuresOf(lineOf(a)), [[deadUrl, "refused"]], "this call was the probe");
    }
    await assertNothingLeft(stack);
  });
});

describe("a model whose only pod fails a call, with a fallback", SUITE, () => {
  let big: RawPod;
  let small: RawPod;
  let stack: Stack;
  let behave: Behaviour = answer503;

  before(async () => {
    big = await startRawPod((req, res, call) => behave(req, res, call));
    small = await startRawPod(answerOk);
    // A short cooldown, waited out between tests: each starts with big's pod closed.
    stack = await startStack({ sims: [], config: () => config(big.url, small, 0.05), env: ENV });
  });
  after(async () => {
    await stack.close();
    await big.close();
    await small.close();
  });

  test("the pod's own 503: the call goes to the fallback, which alone runs it", async () => {
    behave = answer503;
    const a = await chat(stack.url, "big", { content: "overloaded" });
    assertServedBySmall(a, small, "overloaded");
    assert.deepEqual(big.ids(), [a.headers["x-sluice-request-id"]]);
    assert.equal(JSON.parse(big.calls[0]!.body).model, "big", "big's pod was asked for big");
    assert.equal(big.calls[0]!.headers.authorization, "Bearer big-secret");
    await assertNothingLeft(stack);
  });

  test("a call the pod took and dropped is not sent to the fallback: 502", async () => {
    await waitFor("big's breaker to close", () => !stack.gateway.governor.isTripped(big.url));
    behave = dropAfterRead;
    const before = small.calls.length;
    const a = await chat(stack.url, "big", { content: "dropped" });
    assert.equal(a.status, 502, a.text);
    assert.equal(errorOf(a.text).code, "upstream_error");
    assert.equal(small.calls.length, before, "the fallback never saw it");
    await assertNothingLeft(stack);
  });
});
