/**
 * What the outage tests share: a fleet store on a private redis-server the test may kill and
 * start again, the skip (or CI failure) without a redis-server binary, and waiting until the store
 * is connected again.
 */
import assert from "node:assert/strict";
import { type OnStoreError, RedisStore } from "../../src/store/redis/redis-store.js";
import { freePort } from "../helpers/index.js";
import { hasRedisServer, RedisProcess, uniquePrefix } from "./redis-helpers.js";
import { TcpProxy } from "./tcp-proxy.js";

/** The stores and servers a file started: `close()` them in its `after`. */
export class OutageFixture {
  readonly #servers: RedisProcess[] = [];
  readonly #stores: RedisStore[] = [];
  readonly #proxies: TcpProxy[] = [];

  /** A started store (replica r1, 600 ms leases, 2 expected replicas) on its own redis-server. */
  async start(policy: OnStoreError): Promise<{ server: RedisProcess; store: RedisStore }> {
    const server = new RedisProcess(await freePort());
    this.#servers.push(server);
    await server.start();
    return { server, store: await this.#store(server.url, policy, 600) };
  }

  /**
   * A started store that reaches its own redis-server through a `TcpProxy`, so the test can cut
   * the network while Redis keeps its data (and the replica's lease, `leaseTtlMs` long).
   */
  async startBehindProxy(
    policy: OnStoreError,
    leaseTtlMs: number,
  ): Promise<{ server: RedisProcess; proxy: TcpProxy; store: RedisStore; prefix: string }> {
    const server = new RedisProcess(await freePort());
    this.#servers.push(server);
    await server.start();
    const proxy = new TcpProxy(await freePort(), server.port);
    this.#proxies.push(proxy);
    await proxy.restore();
    const prefix = uniquePrefix();
    return { server, proxy, prefix, store: await this.#store(proxy.url, policy, leaseTtlMs, prefix) };
  }

  async #store(url: string, policy: OnStoreError, leaseTtlMs: number, prefix = uniquePrefix()) {
    const store = new RedisStore({
      url,
      prefix,
      replica: "r1",
      leaseTtlMs,
      onStoreError: policy,
      expectedReplicas: 2,
    });
    this.#stores.push(store);
    await store.start();
    return store;
  }

  async close(): Promise<void> {
    for (const p of this.#proxies) await p.restore(); // the stores' last releases get through
    await Promise.all(this.#stores.map((s) => s.close()));
    await Promise.all(this.#proxies.map((p) => p.cut()));
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
