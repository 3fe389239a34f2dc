/**
 * The chaos run's own redis-server: on a free port, no persistence (a restart is a Redis that
 * lost its data), `DEBUG` allowed (for `DEBUG SLEEP`). The harness kills it, starts it again,
 * flushes it, stalls it and fills its memory; and after the traffic it reads what is still
 * counted under the run's prefix.
 */
import { Redis } from "ioredis";
import { RedisProcess } from "../store/redis-helpers.js";

export class ChaosRedis extends RedisProcess {
  constructor(port: number) {
    super(port, ["--enable-debug-command", "yes"]);
  }

  /** Starts it unless it runs already. */
  override async start(): Promise<void> {
    if (!this.up) await super.start();
  }

  /** SIGKILL: an outage, not a shutdown. */
  kill(): Promise<void> {
    return this.stop();
  }

  /** Runs `fn` on a fresh connection (a blocked or restarted server never strands a shared one). */
  async with<T>(fn: (client: Redis) => Promise<T>): Promise<T> {
    const client = new Redis(this.url, {
      protocol: 2,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      connectTimeout: 2000,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    client.on("error", () => {});
    try {
      await client.connect();
      return await fn(client);
    } finally {
      client.disconnect();
    }
  }
}

/** What Redis still counts under a prefix once the traffic has stopped. */
export interface RedisLeftovers {
  /** Budget hash → calls still counted there by replicas whose lease is alive. */
  readonly counted: Record<string, number>;
  /** Replicas advertising waiters (`{prefix}:waiting`) with a live entry. */
  readonly waiting: string[];
  /** Fields left by replicas whose lease is gone (ignored by every script; not a leak). */
  readonly deadFields: number;
}

/** Reads the budget hashes (`{prefix}:b:*`) and the waiting set, by live lease (Redis's TIME). */
export async function leftovers(redis: ChaosRedis, prefix: string): Promise<RedisLeftovers> {
  return redis.with(async (c) => {
    const tag = `{${prefix}}`;
    const [sec, micro] = await c.time();
    const nowMs = Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
    const leases: string[] = await c.zrange(`${tag}:replicas`, "0", "-1", "WITHSCORES");
    const alive = new Set<string>();
    for (let i = 0; i < leases.length; i += 2) if (Number(leases[i + 1]) > nowMs) alive.add(leases[i]!);
    const counted: Record<string, number> = {};
    let deadFields = 0;
    for (const key of await c.keys(`${tag}:b:*`)) {
      const fields = await c.hgetall(key);
      let sum = 0;
      for (const [replica, n] of Object.entries(fields)) {
        if (alive.has(replica)) sum += Number(n);
        else deadFields++;
      }
      if (sum !== 0) counted[key.slice(tag.length + 1)] = sum;
    }
    const waiting = await c.zrangebyscore(`${tag}:waiting`, nowMs, "+inf");
    return { counted, waiting, deadFields };
  });
}
