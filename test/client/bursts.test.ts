/**
 * `sluice/client` under a flood, against a real gateway (issue 12): callers sharing one
 * `createSluiceFetch` ride out more than the gateway holds with no 429 reaching them, and a
 * thousand refused at once come back at the pace the gateway drains, not in a second spike.
 * Everything is measured at the gateway (its server's own request events).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createSluiceFetch } from "../../src/client/index.js";
import { assertNothingLeft, model, type Stack, startStack } from "../gateway/helpers.js";
import { chatInit, peakIn, recordArrivals } from "./helpers.js";

/** A 4 + 4 gateway: one pod of 4 slots, 4 queued, the rest refused at once. */
function fourPlusFour(serviceMs: number): Promise<Stack> {
  return startStack({
    sims: [{ maxNumSeqs: 4, serviceMs }],
    config: ([pod]) => ({ models: [model("m", [pod!], { queue_limit: 4, queue_timeout_s: 30 }, 4)] }),
  });
}

describe("30 callers against a 4 + 4 gateway", { timeout: 30_000 }, () => {
  let stack: Stack;
  before(async () => {
    stack = await fourPlusFour(50);
  });
  after(() => stack.close());

  test("all succeed and no 429 reaches them, though the gateway refused some", async () => {
    const recorder = recordArrivals(stack);
    const sluiceFetch = createSluiceFetch({ baseUrl: stack.url });
    const statuses = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const res = await sluiceFetch("/v1/chat/completions", chatInit("m", `call ${i}`));
        await res.text();
        return res.status;
      }),
    );
    recorder.stop();
    assert.deepEqual(new Set(statuses), new Set([200]), "every caller got its answer");
    const refusedAtGateway = recorder.arrivals.filter((a) => a.status === 429).length;
    // 30 sent at once into 4 + 4: the gateway refused some, and the client absorbed every one.
    assert.ok(refusedAtGateway > 0, "the gateway refused some (else nothing was absorbed)");
    assert.equal(recorder.arrivals.filter((a) => a.status === 200).length, 30, "each call ran once");
    const [w] = sluiceFetch.windows();
    assert.deepEqual(
      { lane: w!.lane, ceiling: w!.ceiling, inflight: w!.inflight, queued: w!.queued },
      { lane: "m", ceiling: 8, inflight: 0, queued: 0 },
    );
    await assertNothingLeft(stack);
  });
});

describe("1,000 callers refused at once", { timeout: 60_000 }, () => {
  let stack: Stack;
  before(async () => {
    stack = await fourPlusFour(10);
  });
  after(() => stack.close());

  test("come back at the gateway's drain rate: no second spike above 2× it", async () => {
    const recorder = recordArrivals(stack);
    const sluiceFetch = createSluiceFetch({ baseUrl: stack.url });
    const statuses = await Promise.all(
      Array.from({ length: 1000 }, async (_, i) => {
        const res = await sluiceFetch("/v1/chat/completions", chatInit("m", `caller ${i}`));
        await res.text();
        return res.status;
      }),
    );
    recorder.stop();
    assert.deepEqual(new Set(statuses), new Set([200]), "every caller got its answer");

    const arrivals = recorder.arrivals;
    const first = arrivals.slice(0, 1000);
    // Sending a thousand takes the client a moment, and the gateway serves some meanwhile.
    const refusedFirst = first.filter((a) => a.status === 429).length;
    assert.ok(refusedFirst >= 500, `the first burst was mostly refused: ${refusedFirst}`);
    // The drain rate, measured: answers per ms between the first and the last answer.
    const served = arrivals.filter((a) => a.status === 200).map((a) => a.endedAt!);
    served.sort((a, b) => a - b);
    const drainPerMs = (served.length - 1) / (served.at(-1)! - served[0]!);
    // What came back after the first burst, at the gateway, in any 250 ms.
    const returns = arrivals.slice(1000).map((a) => a.at);
    const span = 250;
    const peak = peakIn(returns, span);
    const bound = 2 * drainPerMs * span;
    assert.ok(
      peak <= bound,
      `at most ${bound.toFixed(1)} returns in ${span} ms (2× the drain rate ${(drainPerMs * 1000).toFixed(0)}/s), saw ${peak}`,
    );
    // And nobody was refused a second time: the window kept them within what the gateway holds.
    assert.equal(arrivals.length, 1000 + served.length - first.filter((a) => a.status === 200).length);
    await assertNothingLeft(stack);
  });
});
