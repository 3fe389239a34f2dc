/**
 * Seed 002's two states (D8), told apart where a caller looks (issue 25 item 4): a lane whose
 * every slot is in use and whose callers queue at its limit is `local_queue`; a lane whose pod
 * took capacity away (its breaker opened after failures) is `gateway_degraded`. Each is in the
 * snapshot's lane `state`, in a refusal's `X-Sluice-State` and body `state`, and in
 * `sluice_lane_state{lane,state}` on /metrics.
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import { call, chat, errorOf, model, type Stack, SUITE, startStack, waitFor } from "./helpers.js";
import { neverAnswer, type RawPod, startRawPod } from "./raw-pod.js";

let pods: RawPod[] = [];
let stack: Stack | undefined;

afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await Promise.all(pods.map((p) => p.close()));
  pods = [];
});

const stateOf = (s: Stack, lane: string) =>
  s.gateway.governor.snapshot().lanes.find((l) => l.lane === lane)!.state;

async function gaugeOf(s: Stack, lane: string): Promise<Record<string, number>> {
  const text = (await call(s.url, "/metrics")).text;
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^sluice_lane_state\{lane="([^"]+)",state="([^"]+)"\} (\d+)$/gm))
    if (m[1] === lane) out[m[2]!] = Number(m[3]);
  return out;
}

describe("why callers wait: local_queue and gateway_degraded", SUITE, () => {
  test("a lane queueing at its limit is local_queue, in the snapshot, the refusal and the metrics", async () => {
    const gates: (() => void)[] = [];
    const pod = await startRawPod((_req, res) => {
      gates.push(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"choices":[]}');
      });
    });
    pods = [pod];
    stack = await startStack({
      sims: [],
      config: () => ({ models: [model("m", [pod.url], { queue_limit: 1, queue_timeout_s: 30 })] }),
    });
    assert.equal(stateOf(stack, "m"), "ok");
    const running = chat(stack.url, "m");
    await waitFor("the call at the pod", () => gates.length === 1);
    const queued = chat(stack.url, "m");
    await waitFor("the second call queued", () => stack!.gateway.governor.snapshot().lanes[0]!.queued === 1);
    assert.equal(stateOf(stack, "m"), "local_queue");
    const refused = await chat(stack.url, "m");
    assert.equal(refused.status, 429);
    assert.equal(refused.headers["x-sluice-state"], "local_queue");
    assert.equal(errorOf(refused.text).state, "local_queue");
    assert.deepEqual(await gaugeOf(stack, "m"), { ok: 0, local_queue: 1, gateway_degraded: 0 });
    gates.shift()!();
    await waitFor("the queued call at the pod", () => gates.length === 1);
    gates.shift()!();
    assert.deepEqual([(await running).status, (await queued).status], [200, 200]);
    assert.equal(stateOf(stack, "m"), "ok");
  });

  test("a lane whose pod tripped is gateway_degraded, and its refusal says so", async () => {
    // A pod that never answers: each call times out, a failure for its breaker.
    const pod = await startRawPod(neverAnswer);
    pods = [pod];
    stack = await startStack({
      sims: [],
      config: () => ({
        models: [
          model("m", [pod.url], {
            upstream_timeout_s: 0.3,
            breaker: { fail_threshold: 1, base_cooldown_s: 60, max_cooldown_s: 60 },
          }),
        ],
      }),
    });
    assert.equal((await chat(stack.url, "m")).status, 504);
    // The lease settles just after the answer's last byte reaches the client.
    await waitFor("the breaker to open", () => stateOf(stack!, "m") === "gateway_degraded");
    const refused = await chat(stack.url, "m");
    assert.equal(refused.status, 503);
    assert.equal(refused.headers["x-sluice-reason"], "upstream_unavailable");
    assert.equal(refused.headers["x-sluice-state"], "gateway_degraded");
    assert.equal(errorOf(refused.text).state, "gateway_degraded");
    assert.deepEqual(await gaugeOf(stack, "m"), { ok: 0, local_queue: 0, gateway_degraded: 1 });
    assert.equal(pod.calls.length, 1, "the tripped pod was not called again");
  });
});
