/**
 * Fleet mode end to end: two `sluice serve` processes with `store: redis://…` in front of one pod
 * behave as one gateway with the same config. Counted at the far end: the pod never sees more
 * than the model's limit however the load splits between the replicas, and the fleet uses it
 * (the pod reaches limit − 1 or more at once). A replica killed with SIGKILL gives its slots back
 * within its lease TTL.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { type SimServer, startSim } from "../../src/sim/server.js";
import { SLUICE_MAIN, startServe } from "../helpers/index.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";
import { chat } from "./two-replicas.js";

const MAIN = SLUICE_MAIN;
const LIMIT = 4;

const startReplica = (file: string) => startServe(file, "--port", "0");

describe("fleet mode: two gateway processes on one Redis", { timeout: 60_000 }, () => {
  let dir: string;
  let sim: SimServer;
  let replicas: { child: ChildProcess; url: string }[] = [];
  let skipped = false;

  before(async (t) => {
    const redis = await redisOrSkip(t as never);
    if (redis === null) {
      skipped = true;
      return;
    }
    redis.disconnect();
    sim = await startSim({ maxNumSeqs: 64, serviceMs: 150, tokensPerSecond: 0, jitterSigma: 0 });
    dir = await mkdtemp(join(tmpdir(), "sluice-fleet-"));
    const file = join(dir, "sluice.yaml");
    await writeFile(
      file,
      [
        `store: ${REDIS_URL}`,
        `fleet: { prefix: "${uniquePrefix()}", lease_ttl_s: 1 }`,
        "admission: { max_concurrency: 64 }",
        "models:",
        "  - name: m",
        `    max_concurrent_requests: ${LIMIT}`,
        "    reserve: 0",
        "    queue_limit: 64",
        "    queue_timeout_s: 20",
        `    pods: [ { url: "${sim.url}", max_inflight: 16 } ]`,
        "",
      ].join("\n"),
    );
    replicas = await Promise.all([startReplica(file), startReplica(file)]);
  });

  after(async () => {
    for (const r of replicas) r.child.kill("SIGKILL");
    await sim?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("the pod never sees more than the shared limit, and the fleet uses it", async (t) => {
    if (skipped) return t.skip("no Redis");
    sim.resetStats();
    const statuses = await Promise.all(Array.from({ length: 32 }, (_, i) => chat(replicas[i % 2]!.url, i)));
    assert.deepEqual(new Set(statuses), new Set([200]), "every call answered");
    const stats = sim.stats();
    assert.equal(stats.completed, 32);
    assert.ok(stats.maxRunningSeen <= LIMIT, `the pod saw ${stats.maxRunningSeen} at once, limit ${LIMIT}`);
    assert.ok(
      stats.maxRunningSeen >= LIMIT - 1,
      `the fleet used its limit (${stats.maxRunningSeen} of ${LIMIT})`,
    );
  });

  test("--workers 2: two processes on one port share the limit through the store", async (t) => {
    if (skipped) return t.skip("no Redis");
    const file = join(dir, "sluice.yaml");
    const workers = spawn(
      process.execPath,
      ["--import", "tsx", MAIN, "serve", "--config", file, "--port", "0", "--workers", "2"],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    try {
      let stderr = "";
      // Both workers have said they listen (each starts on its own; on a busy machine the
      // second can take seconds, so the test waits for its line, not for a fixed time).
      const url = await new Promise<string>((resolve, reject) => {
        workers.stderr!.on("data", (chunk: Buffer) => {
          stderr += chunk.toString();
          const m = /listening on (http:\/\/\S+)/.exec(stderr);
          if (m && stderr.match(/listening on/g)!.length >= 2) resolve(m[1]!);
        });
        workers.once("exit", (code) => reject(new Error(`exited (${code}):\n${stderr}`)));
      });
      assert.equal(stderr.match(/listening on/g)?.length, 2, "two workers listening");
      sim.resetStats();
      const statuses = await Promise.all(Array.from({ length: 24 }, (_, i) => chat(url, 300 + i)));
      assert.deepEqual(new Set(statuses), new Set([200]));
      assert.ok(
        sim.stats().maxRunningSeen <= LIMIT,
        `the pod saw ${sim.stats().maxRunningSeen}, limit ${LIMIT}`,
      );
    } finally {
      workers.kill("SIGTERM");
      await new Promise((r) => workers.once("exit", r));
    }
  });

  test("--workers 2 without a Redis store is refused: each process would hold its own limits", async (t) => {
    if (skipped) return t.skip("no Redis");
    const file = join(dir, "memory.yaml");
    await writeFile(file, `models:\n  - name: m\n    pods: [ { url: "${sim.url}" } ]\n`);
    const child = spawn(
      process.execPath,
      ["--import", "tsx", MAIN, "serve", "--config", file, "--workers", "2"],
      {
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    child.stderr!.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
    assert.equal(code, 2);
    assert.match(stderr, /--workers > 1 needs store: redis/);
  });

  test("a replica killed with SIGKILL while holding slots gives them back within its lease TTL", async (t) => {
    if (skipped) return t.skip("no Redis");
    sim.resetStats();
    // The first replica takes all 4 slots with slow calls, then dies without releasing.
    sim.setProfile({ serviceMs: 4000 });
    const doomed = Array.from({ length: LIMIT }, (_, i) => chat(replicas[0]!.url, 100 + i).catch(() => 0));
    const started = Date.now();
    while (sim.stats().running < LIMIT && Date.now() - started < 3000)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(sim.stats().running, LIMIT);
    replicas[0]!.child.kill("SIGKILL");
    await Promise.all(doomed);
    sim.setProfile({ serviceMs: 10 });
    const t0 = Date.now();
    assert.equal(await chat(replicas[1]!.url, 200), 200);
    const waited = Date.now() - t0;
    assert.ok(
      waited < 3000,
      `the survivor got a slot within the 1 s lease TTL (+ a heartbeat), took ${waited} ms`,
    );
  });
});
