/**
 * What the outage tests share: a fleet store on a private redis-server the test may kill and
 * start again, the skip (or CI failure) without a redis-server binary, and waiting until the store
 * is connected again.
 */
import assert from "node:assert/strict";
import { type OnStoreError, RedisStore } from "../../src/store/redis.js";
import { freePort, hasRedisServer, RedisProcess, uniquePrefix } from "./redis-helpers.js";

/** The stores and servers a file started: `close()` them in its `after`. */
export class OutageFixture {
  readonly #servers: RedisProcess[] = [];
  readonly #stores: RedisStore[] = [];

  /** A started store (replica r1, 600 ms leases, 2 expected replicas) on its own redis-server. */
  async start(policy: OnStoreError): Promise<{ server: RedisProcess; store: RedisStore }> {
    const server = new RedisProcess(await freePort());
    this.#servers.push(server);
    await server.start();
    const store = new RedisStore({
      url: server.url,
      prefix: uniquePrefix(),
      replica: "r1",
      leaseTtlMs: 600,
      onStoreError: policy,
      expectedReplicas: 2,
    });
    this.#stores.push(store);
    await store.start();
    return { server, store };
  }

  async close(): Promise<void> {
    await Promise.all(this.#stores.map((s) => s.close()));
    await Promise.all(this.#servers.map((s) => s.stop()));
  }
}

/** Skips `t` (true) where no redis-server binary exists; under CI=true that is a failure. */
export function skipWithoutRedisServer(t: { skip(m: string): void }): boolean {
  if (hasRedisServer()) return false;
  if (process.env.CI === "true") throw new Error("CI needs redis-server on the PATH for the outage tests");
  t.skip("no redis-server on the PATH: the outage tests start their own");
  return true;
}

/** Heartbeats until the store is connected again (ioredis reconnects with a short backoff). */
export async function untilConnected(store: RedisStore): Promise<void> {
  for (let i = 0; i < 60 && store.status().mode !== "connected"; i++) {
    await store.heartbeat();
    if (store.status().mode !== "connected") await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(store.status().mode, "connected", "back within a few heartbeats");
}
