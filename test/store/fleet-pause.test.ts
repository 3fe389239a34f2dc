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
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { request } from "undici";
import { type SimServer, startSim } from "../../src/sim/server.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const MAIN = new URL("../../src/cli/main.ts", import.meta.url).pathname;
const LIMIT = 6;

async function startReplica(file: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", MAIN, "serve", "--config", file, "--port", "0"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(stderr);
      if (m) resolve(m[1]!);
    });
    child.once("exit", (code) => reject(new Error(`replica exited (${code}) before listening:\n${stderr}`)));
  });
  return { child, url };
}

async function chat(url: string, i: number): Promise<number> {
  const res = await request(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: `call ${i}` }] }),
  });
  await res.body.text();
  return res.statusCode;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("a replica paused past its lease (two sluice serve processes, SIGSTOP/SIGCONT)", {
  timeout: 90_000,
}, () => {
  let dir: string;
  let sim: SimServer;
  let a: { child: ChildProcess; url: string } | undefined;
  let b: { child: ChildProcess; url: string } | undefined;
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
    dir = await mkdtemp(join(tmpdir(), "sluice-pause-"));
    const file = join(dir, "sluice.yaml");
    await writeFile(
      file,
      [
        `store: ${REDIS_URL}`,
        `fleet: { prefix: "${uniquePrefix()}", lease_ttl_s: 1, expected_replicas: 2 }`,
        "admission: { max_concurrency: 64 }",
        "models:",
        "  - name: m",
        `    max_concurrent_requests: ${LIMIT}`,
        "    reserve: 0",
        "    queue_limit: 64",
        "    queue_timeout_s: 60",
        `    pods: [ { url: "${sim.url}", max_inflight: 32 } ]`,
        "",
      ].join("\n"),
    );
    [a, b] = await Promise.all([startReplica(file), startReplica(file)]);
  });

  after(async () => {
    clearInterval(sampler);
    a?.child.kill("SIGCONT");
    for (const r of [a, b]) r?.child.kill("SIGKILL");
    await sim?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const running = () => sim.stats().running;
  async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
    const end = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what} (pod running ${running()})`);
      await sleep(10);
    }
  }

  test("over by at most what the paused replica held, and nothing more is granted once it is back", async (t) => {
    if (skipped) return t.skip("no Redis");
    const start = performance.now();
    sampler = setInterval(() => samples.push([performance.now() - start, running()]), 10);
    const calls: Promise<number>[] = [];
    let i = 0;
    for (let k = 0; k < 3; k++) calls.push(chat(a!.url, i++));
    await until("a's 3 calls at the pod", () => running() === 3);
    for (let k = 0; k < 3; k++) calls.push(chat(b!.url, i++));
    await until("the pod full", () => running() === LIMIT);
    a!.child.kill("SIGSTOP");
    const stopped = performance.now();
    for (let k = 0; k < 3; k++) calls.push(chat(b!.url, i++)); // queued on b: the lane is full
    // a's lease (1 s) expires; b refills its slots while a's calls still run at the pod.
    await until("b took the paused replica's slots", () => running() === LIMIT + 3, 10_000);
    await sleep(Math.max(0, 2500 - (performance.now() - stopped)));
    a!.child.kill("SIGCONT");
    const resumed = performance.now() - start;
    const atResume = running();
    for (let k = 0; k < 2; k++) calls.push(chat(a!.url, i++), chat(b!.url, i++));
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
