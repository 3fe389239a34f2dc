/**
 * The store contract suite against the Redis store on one server (the machine's, at REDIS_URL):
 * the same checks the memory store and the Cluster pass, per-key bounds included.
 */
import { after, test } from "node:test";
import { Redis } from "ioredis";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { describeStore } from "./contract.js";
import { REDIS_URL, uniquePrefix } from "./redis-helpers.js";

async function reachable(): Promise<string | null> {
  const probe = new Redis(REDIS_URL, { protocol: 2, lazyConnect: true, maxRetriesPerRequest: 1 });
  probe.on("error", () => {});
  try {
    await probe.connect();
    await probe.ping();
    return null;
  } catch (error) {
    return `no Redis answers at ${REDIS_URL} (${(error as Error).message}); set REDIS_URL or start redis-server`;
  } finally {
    probe.disconnect();
  }
}

const missing = await reachable();
const stores: RedisStore[] = [];
after(() => Promise.all(stores.map((s) => s.close())));

if (missing !== null) {
  test("the store contract on one Redis server", (t) => {
    if (process.env.CI === "true") throw new Error(`CI needs Redis: ${missing}`);
    t.skip(missing);
  });
} else {
  describeStore(
    "redis",
    async () => {
      const store = new RedisStore({ url: REDIS_URL, prefix: uniquePrefix() });
      stores.push(store);
      await store.start();
      return store;
    },
    { propertyRuns: 40 },
  );
}
