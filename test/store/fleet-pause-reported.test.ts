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
/** The sim serves 100 ms plus 10 ms per output token: `max_tokens` sets each call's length. */
const A_TOKENS = 350; // a's calls: 3.6 s
const B_TOKENS = 1000; // b's first calls: 10.1 s, so they still hold their slots when a's end
const QUEUED_TOKENS = 50; // b's queued calls: 0.6 s

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

/** One call; resolves with its status and when it ended (ms since `start`). */
async function chat(url: string, i: number, maxTokens: number, start: number): Promise<[number, number]> {
  const res = await request(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "m",
      max_tokens: maxTokens,
      messages: [{ role: "user", content: `call ${i}` }],
    }),
  });
  await res.body.text();
  return [res.statusCode, performance.now() - start];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("a replica paused past its lease, the pod reporting its running count (two sluice serve, SIGSTOP/SIGCONT)", {
  timeout: 120_000,
}, () => {
  let dir: string;
  let sim: SimServer;
  let a: { child: ChildProcess; url: string } | undefined;
  let b: { child: ChildProcess; url: string } | undefined;
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
    dir = await mkdtemp(join(tmpdir(), "sluice-pause-reported-"));
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
        "    adaptive: { metrics_poll_s: 0.5 }",
        `    pods: [ { url: "${sim.url}", max_inflight: ${LIMIT}, metrics_url: "${sim.url}/metrics" } ]`,
        "",
      ].join("\n"),
    );
    [a, b] = await Promise.all([startReplica(file), startReplica(file)]);
  });

  after(async () => {
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

  test("the pod never runs more than 6; b's waiters get a's slots as the pod shows a's calls ending", async (t) => {
    if (skipped) return t.skip("no Redis");
    const start = performance.now();
    let i = 0;
    const aCalls = [0, 1, 2].map(() => chat(a!.url, i++, A_TOKENS, start));
    await until("a's 3 calls at the pod", () => running() === 3);
    const bCalls = [0, 1, 2].map(() => chat(b!.url, i++, B_TOKENS, start));
    await until("the pod full", () => running() === LIMIT);
    a!.child.kill("SIGSTOP");
    // Queued on b: the lane and the pod are full. a's lease (1 s) expires while its calls run.
    const queued = [0, 1, 2].map(() => chat(b!.url, i++, QUEUED_TOKENS, start));
    const queuedEnds = await Promise.all(queued);
    const stillStopped = a!.child.signalCode === null; // it was never killed meanwhile
    a!.child.kill("SIGCONT");
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
