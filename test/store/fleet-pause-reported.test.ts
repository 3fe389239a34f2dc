/**
 * A replica paused past its lease in front of a pod that reports its own running count (issue 22
 * defect 4, the bound removed): two real `sluice serve` processes on one Redis, one simulated pod
 * of 6 whose `/metrics` says `vllm:num_requests_running`, polled every 500 ms (`metrics_url`,
 * `adaptive.metrics_poll_s`). Replica a holds 3 long calls and is SIGSTOPped past its 1 s lease:
 * Redis stops counting them, but they still run at the pod and the pod says so, so b's waiters
 * get a's slots only once the pod's count shows a's calls ending — while a is still stopped, and
 * before b's own calls end. Counted at the pod (`maxRunningSeen`): never above 6 (without the
 * report: 9, the bound `fleet-pause.test.ts` holds for pods without a `metrics_url`).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type SimServer, startSim } from "../../src/sim/server.js";
import { redisOrSkip } from "./redis-helpers.js";
import { chat, type TwoReplicas, twoReplicas } from "./two-replicas.js";

const LIMIT = 6;
/** The sim serves 100 ms plus 10 ms per output token: `max_tokens` sets each call's length. */
const A_TOKENS = 350; // a's calls: 3.6 s
const B_TOKENS = 1000; // b's first calls: 10.1 s, so they still hold their slots when a's end
const QUEUED_TOKENS = 50; // b's queued calls: 0.6 s

/** One call; resolves with its status and when it ended (ms since `start`). */
const timedChat = async (
  url: string,
  i: number,
  maxTokens: number,
  start: number,
): Promise<[number, number]> => [await chat(url, i, maxTokens), performance.now() - start];

describe("a replica paused past its lease, the pod reporting its running count (two sluice serve, SIGSTOP/SIGCONT)", {
  timeout: 120_000,
}, () => {
  let sim: SimServer;
  let fleet: TwoReplicas | undefined;
  let skipped = false;

  before(async (t) => {
    const redis = await redisOrSkip(t as never);
    if (redis === null) {
      skipped = true;
      return;
    }
    redis.disconnect();
    sim = await startSim({
      maxNumSeqs: 64,
      serviceMs: 100,
      msPerOutputToken: 10,
      defaultOutputTokens: 2000,
      tokensPerSecond: 0,
      jitterSigma: 0,
    });
    fleet = await twoReplicas(sim, LIMIT, [
      "adaptive: { metrics_poll_s: 0.5 }",
      `pods: [ { url: "${sim.url}", max_inflight: ${LIMIT}, metrics_url: "${sim.url}/metrics" } ]`,
    ]);
  });

  after(async () => {
    await fleet?.close();
    await sim?.close();
  });

  const running = () => sim.stats().running;
  const until = (what: string, ok: () => boolean, ms?: number) => fleet!.until(what, ok, ms);

  test("the pod never runs more than 6; b's waiters get a's slots as the pod shows a's calls ending", async (t) => {
    if (skipped) return t.skip("no Redis");
    const start = performance.now();
    let i = 0;
    const aCalls = [0, 1, 2].map(() => timedChat(fleet!.a.url, i++, A_TOKENS, start));
    await until("a's 3 calls at the pod", () => running() === 3);
    const bCalls = [0, 1, 2].map(() => timedChat(fleet!.b.url, i++, B_TOKENS, start));
    await until("the pod full", () => running() === LIMIT);
    fleet!.a.child.kill("SIGSTOP");
    // Queued on b: the lane and the pod are full. a's lease (1 s) expires while its calls run.
    const queued = [0, 1, 2].map(() => timedChat(fleet!.b.url, i++, QUEUED_TOKENS, start));
    const queuedEnds = await Promise.all(queued);
    const stillStopped = fleet!.a.child.signalCode === null; // it was never killed meanwhile
    fleet!.a.child.kill("SIGCONT");
    const rest = await Promise.all([...aCalls, ...bCalls]);
    const bEnds = rest.slice(3).map(([, at]) => at);
    const statuses = [...queuedEnds, ...rest].map(([s]) => s);
    assert.deepEqual(new Set(statuses), new Set([200]), "every call answered");
    assert.ok(stillStopped);
    const peak = sim.stats().maxRunningSeen;
    assert.ok(peak <= LIMIT, `the pod ran ${peak} at once (limit ${LIMIT}; 9 without the pod's report)`);
    // b's queued calls ran while a was stopped and b's own calls still held their slots: what let
    // them in was the pod's count showing a's calls ending, not a release b saw.
    const lastQueued = Math.max(...queuedEnds.map(([, at]) => at));
    assert.ok(
      lastQueued < Math.min(...bEnds),
      `b's queued calls ended at ${Math.round(lastQueued)} ms, before b's first calls (${bEnds.map(Math.round).join(", ")} ms)`,
    );
  });
});
