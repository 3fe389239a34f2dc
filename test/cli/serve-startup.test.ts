/**
 * `sluice serve` that cannot start says why and exits 2 (issue 22 defect 6). Before, a Redis store
 * that could not be reached printed "sluice: Connection is closed." (naming neither the store nor
 * what to do) and never exited, ioredis reconnecting for ever; a port in use with a Redis store
 * printed EADDRINUSE and hung the same way (the memory store exited 1). Now: an error naming
 * `store` (its URL with the password hidden) or `listen`, and exit code 2, within a bounded time
 * — also for a Redis that accepts the connection and never answers. Run as the real command in a
 * child process: the exit code, stderr and the time to exit are what is under test.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { freePort } from "../helpers/index.js";
import { REDIS_URL, redisOrSkip } from "../store/redis-helpers.js";

const MAIN = new URL("../../src/cli/main.ts", import.meta.url).pathname;
/** How long the command may take to give up: Redis's connect and the store's start deadline, on a loaded machine. */
const DEADLINE_MS = 45_000;

let dir: string;
const servers: Server[] = [];
const sockets: Socket[] = [];
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "sluice-startup-"));
});
after(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await rm(dir, { recursive: true, force: true });
});

function yaml(head: string): string {
  return `${head}
models:
  - name: m
    max_concurrent_requests: 2
    pods: [ { url: "http://127.0.0.1:9", max_inflight: 2 } ]
`;
}

/** Runs `sluice serve --config` on `config`; its exit code, stderr and how long it took. */
async function serve(config: string): Promise<{ code: number | null; stderr: string; ms: number }> {
  const file = join(dir, `sluice-${Math.random().toString(36).slice(2)}.yaml`);
  await writeFile(file, config);
  const started = performance.now();
  const child = spawn(process.execPath, ["--import", "tsx", MAIN, "serve", "--config", file], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const killer = setTimeout(() => child.kill("SIGKILL"), DEADLINE_MS);
  const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  clearTimeout(killer);
  return { code, stderr, ms: performance.now() - started };
}

/** A TCP server on a free port: silent (accepts and never answers), or just holding the port. */
async function listener(): Promise<number> {
  const server = createServer((socket) => sockets.push(socket));
  servers.push(server);
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return port;
}

describe("sluice serve: a start that cannot succeed exits 2 and names the cause", () => {
  test("Redis refuses the connection: names `store` with the password hidden", async () => {
    const port = await freePort(); // nothing listens there
    const { code, stderr, ms } = await serve(yaml(`store: redis://:hunter2@127.0.0.1:${port}/0`));
    assert.equal(code, 2, `exit code 2 (stderr: ${stderr})`);
    assert.match(stderr, /\bstore\b/, "names the config key");
    assert.ok(stderr.includes(`redis://:***@127.0.0.1:${port}/0`), `the URL, redacted: ${stderr}`);
    assert.ok(!stderr.includes("hunter2"), "never the password");
    assert.ok(ms < DEADLINE_MS, `exited by itself, in ${Math.round(ms)} ms`);
  });

  test("a Redis that accepts and never answers: exits 2 within the start deadline", async () => {
    const port = await listener();
    const { code, stderr, ms } = await serve(yaml(`store: redis://127.0.0.1:${port}`));
    assert.equal(code, 2, `exit code 2 (stderr: ${stderr})`);
    assert.match(stderr, /\bstore\b.*redis:\/\/127\.0\.0\.1/s);
    assert.ok(ms < DEADLINE_MS, `exited by itself, in ${Math.round(ms)} ms`);
  });

  test("the port is in use, Redis store: names `listen` and exits 2", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    const port = await listener();
    const prefix = `sluice-test-startup-${process.pid}`;
    const { code, stderr, ms } = await serve(
      yaml(`store: ${REDIS_URL}\nfleet: { prefix: ${prefix}, lease_ttl_s: 3 }\nlisten: 127.0.0.1:${port}`),
    );
    const left = await redis.keys(`{${prefix}}*`);
    if (left.length > 0) await redis.del(...left);
    redis.disconnect();
    assert.equal(code, 2, `exit code 2 (stderr: ${stderr})`);
    assert.match(stderr, /\blisten\b/);
    assert.match(stderr, new RegExp(`127\\.0\\.0\\.1:${port}`));
    assert.match(stderr, /EADDRINUSE/);
    assert.ok(ms < DEADLINE_MS, `exited by itself, in ${Math.round(ms)} ms`);
  });

  test("the port is in use, memory store: names `listen` and exits 2", async () => {
    const port = await listener();
    const { code, stderr } = await serve(yaml(`listen: 127.0.0.1:${port}`));
    assert.equal(code, 2, `exit code 2 (stderr: ${stderr})`);
    assert.match(stderr, /\blisten\b.*EADDRINUSE/s);
  });
});
