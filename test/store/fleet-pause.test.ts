/**
 * A replica paused longer than its lease (SIGSTOP, then SIGCONT), two real `sluice serve`
 * processes on one Redis in front of one simulated pod that counts its running calls (issue 22
 * defect 4). What docs/fleet.md promises for it ("A replica paused longer than lease_ttl_s"): the
 * pod is over the limit by at most what the paused replica held, only until those calls end, and
 * once it resumes no replica is granted anything until the count is under the limit again — the
 * overshoot never grows after the resume. This pod has no `metrics_url`, so the fleet has only the
 * leases to go by and this test holds the bound, not zero; a pod that reports its own running
 * count removes it (`fleet-pause-reported.test.ts`). A pause shorter than the lease keeps the pod
 * at the limit.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type SimServer, startSim } from "../../src/sim/server.js";
import { delay } from "../helpers/index.js";
import { redisOrSkip } from "./redis-helpers.js";
import { chat, type TwoReplicas, twoReplicas } from "./two-replicas.js";

const LIMIT = 6;

describe("a replica paused past its lease (two sluice serve processes, SIGSTOP/SIGCONT)", {
  timeout: 90_000,
}, () => {
  let sim: SimServer;
  let fleet: TwoReplicas | undefined;
  let skipped = false;
  /** The pod's running count, sampled every 10 ms, with when (ms since the test's start). */
  const samples: Array<[number, number]> = [];
  let sampler: NodeJS.Timeout | undefined;

  before(async (t) => {
    const redis = await redisOrSkip(t as never);
    if (redis === null) {
      skipped = true;
      return;
    }
    redis.disconnect();
    sim = await startSim({ maxNumSeqs: 64, serviceMs: 5000, tokensPerSecond: 0, jitterSigma: 0 });
    fleet = await twoReplicas(sim, LIMIT, [`pods: [ { url: "${sim.url}", max_inflight: 32 } ]`]);
  });

  after(async () => {
    clearInterval(sampler);
    await fleet?.close();
    await sim?.close();
  });

  const running = () => sim.stats().running;
  const until = (what: string, ok: () => boolean, ms?: number) => fleet!.until(what, ok, ms);

  test("over by at most what the paused replica held, and nothing more is granted once it is back", async (t) => {
    if (skipped) return t.skip("no Redis");
    const start = performance.now();
    sampler = setInterval(() => samples.push([performance.now() - start, running()]), 10);
    const calls: Promise<number>[] = [];
    let i = 0;
    for (let k = 0; k < 3; k++) calls.push(chat(fleet!.a.url, i++));
    await until("a's 3 calls at the pod", () => running() === 3);
    for (let k = 0; k < 3; k++) calls.push(chat(fleet!.b.url, i++));
    await until("the pod full", () => running() === LIMIT);
    fleet!.a.child.kill("SIGSTOP");
    const stopped = performance.now();
    for (let k = 0; k < 3; k++) calls.push(chat(fleet!.b.url, i++)); // queued on b: the lane is full
    // a's lease (1 s) expires; b refills its slots while a's calls still run at the pod.
    await until("b took the paused replica's slots", () => running() === LIMIT + 3, 10_000);
    await delay(Math.max(0, 2500 - (performance.now() - stopped)));
    fleet!.a.child.kill("SIGCONT");
    const resumed = performance.now() - start;
    const atResume = running();
    for (let k = 0; k < 2; k++) calls.push(chat(fleet!.a.url, i++), chat(fleet!.b.url, i++));
    const statuses = await Promise.all(calls);
    clearInterval(sampler);
    assert.deepEqual(new Set(statuses), new Set([200]), "every call answered");
    const peak = Math.max(...samples.map(([, n]) => n));
    assert.ok(peak <= LIMIT + 3, `over by at most the paused replica's 3 (pod peak ${peak})`);
    // After the resume the count never grows past what it was, and new calls start only under the limit.
    const after = samples.filter(([at]) => at >= resumed + 50);
    let most = atResume;
    for (const [at, n] of after) {
      assert.ok(
        n <= Math.max(LIMIT, most),
        `at ${Math.round(at)} ms the pod ran ${n}, above ${Math.max(LIMIT, most)}`,
      );
      most = Math.min(most, Math.max(n, LIMIT)); // the allowance only shrinks back to the limit
    }
    assert.ok(
      after.some(([, n]) => n === LIMIT),
      "the fleet used the limit again once the paused calls ended",
    );
  });
});
