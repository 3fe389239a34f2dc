/**
 * Redis for tests: the machine's server at REDIS_URL (default 127.0.0.1:6379), a unique key
 * prefix per test, and a private `redis-server` on a free port for tests that stop or restart it.
 * Without Redis these tests skip with a message saying so — except under CI=true, where a
 * missing Redis is a failure.
 */
import { spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import type { TestContext } from "node:test";
import { Redis } from "ioredis";

export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/**
 * A test file's clean-up: closes its `stores`, then deletes every key under `prefixes` through
 * `redis` (when the file connected one) and disconnects it.
 */
export async function closeAndClean(
  stores: readonly { close(): Promise<void> }[],
  prefixes: readonly string[],
  redis: Redis | null,
): Promise<void> {
  await Promise.all(stores.map((s) => s.close()));
  if (redis === null) return;
  for (const p of prefixes) {
    const keys = await redis.keys(`{${p}}*`);
    if (keys.length > 0) await redis.del(...keys);
  }
  redis.disconnect();
}

/** A connected client (RESP2, as the store uses), or null after skipping `t` when none answers. */
export async function redisOrSkip(t: TestContext, url = REDIS_URL): Promise<Redis | null> {
  const client = new Redis(url, {
    protocol: 2,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 1000,
  });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.ping();
    return client;
  } catch (error) {
    client.disconnect();
    const why = `no Redis answers at ${url} (${(error as Error).message}); set REDIS_URL or start redis-server`;
    if (process.env.CI === "true") throw new Error(`CI needs Redis: ${why}`);
    t.skip(why);
    return null;
  }
}

/** A key prefix no other test uses. */
export const uniquePrefix = (): string => `sluice-test:${randomUUID()}`;

/** Whether a `redis-server` binary is on the PATH. */
export function hasRedisServer(): boolean {
  return spawnSync("redis-server", ["--version"]).status === 0;
}

/** A private redis-server (no persistence) this test may stop and start. */
export class RedisProcess {
  #child: ReturnType<typeof spawn> | null = null;
  constructor(
    readonly port: number,
    /** More `redis-server` arguments (the chaos harness allows `DEBUG`). */
    readonly extraArgs: readonly string[] = [],
  ) {}

  /** True while a server this object started runs. */
  get up(): boolean {
    return this.#child !== null;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const child = spawn(
      "redis-server",
      [
        "--port",
        String(this.port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        ...this.extraArgs,
      ],
      { stdio: "ignore" },
    );
    this.#child = child;
    const probe = new Redis(this.url, { protocol: 2, lazyConnect: true, maxRetriesPerRequest: 0 });
    probe.on("error", () => {});
    for (let i = 0; i < 100; i++) {
      try {
        await probe.connect();
        await probe.ping();
        probe.disconnect();
        return;
      } catch {
        probe.disconnect();
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error(`redis-server did not start on port ${this.port}`);
  }

  /** Stops it at once (SIGKILL: an outage, not a shutdown). */
  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = null;
    if (child === null || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGKILL");
    });
  }
}
