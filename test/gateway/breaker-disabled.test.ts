/**
 * `breaker: { enabled: false }` per model (issue 8 item 11, seed 001's switch): a pod that refuses
 * every call is never isolated. Each call is dispatched to it (within its width), where the
 * default breaker sends it nothing after the first refusal; the width still adapts.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { parseConfig } from "../../src/config/schema.js";
import { assertNothingLeft, chat, model, type Stack, SUITE, startStack } from "./helpers.js";

/** A pod that answers every call 503 and counts what it saw. */
interface RefusingPod {
  url: string;
  seen: number;
  close(): Promise<void>;
}

async function refusingPod(): Promise<RefusingPod> {
  const pod: RefusingPod = { url: "", seen: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    pod.seen++;
    req.resume();
    req.on("end", () => {
      res.writeHead(503, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "overloaded", type: "server_error", code: "overloaded" } }));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  pod.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  pod.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return pod;
}

const CALLS = 8;

describe("breaker: { enabled: false }", SUITE, () => {
  let stack: Stack;
  let off: RefusingPod;
  let on: RefusingPod;
  let adapt: RefusingPod;

  /** The three models; `onBreaker` is model "on"'s breaker. */
  const config = (onBreaker: Record<string, unknown>) => ({
    models: [
      model("off", [off.url], { breaker: { enabled: false } }),
      model("on", [on.url], { breaker: onBreaker }),
      model("adapt", [adapt.url], { breaker: { enabled: false }, adaptive: { floor: 1 } }, 8),
    ],
  });

  before(async () => {
    [off, on, adapt] = await Promise.all([refusingPod(), refusingPod(), refusingPod()]);
    stack = await startStack({ sims: [], config: () => config({ base_cooldown_s: 60, max_cooldown_s: 60 }) });
  });
  after(async () => {
    await stack.close();
    await Promise.all([off.close(), on.close(), adapt.close()]);
  });

  test("a pod refusing every call gets every call, and its breaker stays closed", async () => {
    for (let i = 0; i < CALLS; i++) {
      const a = await chat(stack.url, "off");
      assert.notEqual(a.headers["x-sluice-reason"], "upstream_unavailable", `call ${i + 1}: ${a.text}`);
    }
    assert.equal(off.seen, CALLS, "every call reached the pod");
    const pod = stack.gateway.governor.snapshot().pods.find((p) => p.id === off.url)!;
    assert.equal(pod.breaker, "closed");
    await assertNothingLeft(stack);
  });

  test("with the breaker on, the same pod is isolated after its first refusal", async () => {
    const answers = [];
    for (let i = 0; i < CALLS; i++) answers.push(await chat(stack.url, "on"));
    assert.equal(on.seen, 1, "only the call that tripped it reached the pod");
    assert.deepEqual(
      answers.slice(1).map((a) => a.headers["x-sluice-reason"]),
      Array(CALLS - 1).fill("upstream_unavailable"),
    );
    await assertNothingLeft(stack);
  });

  test("a reload that switches an open breaker off frees its pod at once", async () => {
    const pod = () => stack.gateway.governor.snapshot().pods.find((p) => p.id === on.url)!;
    assert.equal(pod().breaker, "open", "tripped by the test before, 60 s cooldown");
    stack.gateway.reload(parseConfig(config({ enabled: false })));
    assert.equal(pod().breaker, "closed");
    const seen = on.seen;
    const a = await chat(stack.url, "on");
    assert.notEqual(a.headers["x-sluice-reason"], "upstream_unavailable", a.text);
    assert.equal(on.seen, seen + 1, "the call reached the pod");
    await assertNothingLeft(stack);
  });

  test("the width still adapts: refusals narrow it, and calls keep going to the pod", async () => {
    for (let i = 0; i < CALLS; i++) await chat(stack.url, "adapt");
    assert.equal(adapt.seen, CALLS);
    const pod = stack.gateway.governor.snapshot().pods.find((p) => p.id === adapt.url)!;
    assert.equal(pod.breaker, "closed");
    assert.ok(pod.width < pod.ceiling, `width ${pod.width} was cut below the ceiling ${pod.ceiling}`);
    await assertNothingLeft(stack);
  });
});
