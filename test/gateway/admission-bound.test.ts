/**
 * The gateway bound (`admission.max_concurrency` in flight + `max_queued` admitted) is the
 * Governor's admission budget: on every lane's path, counted from before the body, refused with
 * a Retry-After from the measured drain rate rather than a constant. And one URL is one pod: a
 * pod listed under two models is one budget, counted at the pod itself (issue 8, defect 3).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  type Answer,
  assertNothingLeft,
  assertRefusal,
  chat,
  type Stack,
  SUITE,
  startStack,
  waitFor,
} from "./helpers.js";

describe("the gateway bound", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 8, serviceMs: 300, tokensPerSecond: 0 }],
      config: (urls) => ({
        admission: { max_concurrency: 1, max_queued: 5 },
        models: [
          {
            name: "a",
            max_concurrent_requests: 4,
            queue_limit: 16,
            pods: [{ url: urls[0], max_inflight: 4 }],
          },
          {
            name: "b",
            max_concurrent_requests: 4,
            queue_limit: 16,
            pods: [{ url: urls[0], max_inflight: 4 }],
          },
        ],
      }),
    });
  });
  after(() => stack.close());

  test("holds in flight across models, and refuses past in flight + queued with a Retry-After from the drain rate", async () => {
    // One call first, so the drain rate is measured (about 300 ms per call).
    assert.equal((await chat(stack.url, "a")).status, 200);
    stack.sims[0]!.resetStats();
    const flood: Promise<Answer>[] = [];
    for (let i = 0; i < 6; i++)
      flood.push(chat(stack.url, i % 2 === 0 ? "a" : "b", { content: `flood ${i}` }));
    await waitFor("six admitted", () => stack.gateway.governor.admitted === 6);
    const refused = await chat(stack.url, "b", { content: "one too many" });
    const e = assertRefusal(refused, 429, "queue_full");
    assert.equal(e.lane, "gateway");
    // Six admitted beyond one slot: the newcomer waits for 6 calls of ~300 ms through 1 slot.
    const retryMs = Number(refused.headers["retry-after-ms"]);
    assert.ok(
      retryMs >= 1500 && retryMs <= 4000,
      `Retry-After from the drain rate (~1.8 s), got ${retryMs} ms`,
    );
    assert.equal(refused.headers["retry-after"], String(Math.ceil(retryMs / 1000)));
    const answers = await Promise.all(flood);
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 200, 200, 200, 200],
    );
    assert.equal(stack.sims[0]!.stats().maxRunningSeen, 1, "the pod never saw more than max_concurrency");
    assert.equal(stack.sims[0]!.stats().completed, 6, "the refused call never reached the pod");
    await assertNothingLeft(stack);
    assert.equal(stack.gateway.governor.admitted, 0);
  });
});

describe("one URL is one pod", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 64, serviceMs: 100, tokensPerSecond: 0 }],
      config: (urls) => ({
        admission: { max_concurrency: 64 },
        models: [
          {
            name: "chat",
            max_concurrent_requests: 8,
            queue_limit: 32,
            pods: [{ url: urls[0], max_inflight: 3 }],
          },
          {
            name: "code",
            max_concurrent_requests: 8,
            queue_limit: 32,
            pods: [{ url: urls[0], max_inflight: 3 }],
          },
        ],
      }),
    });
  });
  after(() => stack.close());

  test("a pod listed under two models is granted at most its max_inflight in all, and listed once", async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        chat(stack.url, i % 2 === 0 ? "chat" : "code", { content: `c${i}` }),
      ),
    );
    assert.ok(answers.every((a) => a.status === 200));
    const stats = stack.sims[0]!.stats();
    assert.equal(stats.maxRunningSeen, 3, "3 at the pod, not 3 per model");
    assert.equal(stats.completed, 12);
    // Waiting happened in sluice's queues (priority order, queue timeout), not in the pool.
    assert.ok(
      answers.some((a) => Number(a.headers["x-sluice-queue-ms"]) >= 50),
      "calls beyond the pod's 3 waited in sluice's queue",
    );
    const pods = stack.gateway.governor.snapshot().pods;
    assert.equal(pods.length, 1);
    assert.deepEqual(pods[0]!.lanes, ["chat", "code"]);
    await assertNothingLeft(stack);
  });
});
