/**
 * DESIGN §1 table, in the gateway: a GPU group shared by two models caps their joint in-flight
 * sum (seed 001: qwen and bge-m3 on one GB10), and an account budget caps the models it covers.
 * Counted on the simulated pods themselves, not on sluice's own numbers.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { SimServer } from "../../src/sim/server.js";
import { assertNothingLeft, chat, flush, type Stack, SUITE, startStack } from "./helpers.js";

/** Samples the sims' running counts while `work` runs; returns the highest joint sum seen. */
async function peakJointRunning(sims: SimServer[], work: Promise<unknown>): Promise<number> {
  let peak = 0;
  let done = false;
  void work.finally(() => {
    done = true;
  });
  while (!done) {
    peak = Math.max(
      peak,
      sims.reduce((n, s) => n + s.stats().running, 0),
    );
    await flush();
  }
  return peak;
}

function burst(stack: Stack, models: string[], n: number) {
  return Promise.all(
    Array.from({ length: n }, (_, i) => chat(stack.url, models[i % models.length]!, { content: `b${i}` })),
  );
}

const podSim = { maxNumSeqs: 8, serviceMs: 30, tokensPerSecond: 0 };

describe("a GPU group shared by two models", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [podSim, podSim],
      config: ([chatUrl, embedUrl]) => ({
        models: [
          {
            name: "qwen",
            max_concurrent_requests: 8,
            reserve: 0,
            queue_limit: 64,
            adaptive: false,
            pods: [{ url: chatUrl, max_inflight: 8, gpu_group: "gb10" }],
          },
          {
            name: "bge-m3",
            max_concurrent_requests: 8,
            reserve: 0,
            queue_limit: 64,
            adaptive: false,
            pods: [{ url: embedUrl, max_inflight: 8, gpu_group: "gb10" }],
          },
        ],
        gpu_groups: { gb10: { max_inflight: 5 } },
      }),
    });
  });
  after(() => stack.close());

  test("caps the two models' joint in flight at the group's limit, and every call is served", async () => {
    const work = burst(stack, ["qwen", "bge-m3"], 40);
    const peak = await peakJointRunning(stack.sims, work);
    const answers = await work;
    assert.ok(answers.every((a) => a.status === 200));
    assert.ok(peak <= 5, `joint running ${peak} > group limit 5`);
    assert.ok(peak >= 4, `the group was used (${peak})`);
    assert.deepEqual(
      stack.gateway.governor.snapshot().groups.find((g) => g.group === "gpu:gb10"),
      {
        group: "gpu:gb10",
        limit: 5,
        inflight: 0,
      },
    );
    await assertNothingLeft(stack);
  });
});

describe("an account budget over two models", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [podSim, podSim],
      config: ([a, b]) => ({
        models: [
          {
            name: "gpt-a",
            max_concurrent_requests: 8,
            reserve: 0,
            queue_limit: 64,
            adaptive: false,
            pods: [{ url: a, max_inflight: 8 }],
          },
          {
            name: "gpt-b",
            max_concurrent_requests: 8,
            reserve: 0,
            queue_limit: 64,
            adaptive: false,
            pods: [{ url: b, max_inflight: 8 }],
          },
        ],
        accounts: { "openai-prod": { max_inflight: 3, models: ["gpt-a", "gpt-b"] } },
      }),
    });
  });
  after(() => stack.close());

  test("caps the models it covers together at the account's max_inflight", async () => {
    const work = burst(stack, ["gpt-a", "gpt-b"], 30);
    const peak = await peakJointRunning(stack.sims, work);
    assert.ok((await work).every((a) => a.status === 200));
    assert.ok(peak <= 3, `joint running ${peak} > account limit 3`);
    await assertNothingLeft(stack);
  });
});
