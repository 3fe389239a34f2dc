/**
 * The contenders of `npm run bench:fleet`: one grant + release of one shared concurrency slot
 * through Redis, each the way its library is meant to be used. Every contender counts against
 * one limit far above the callers (nobody ever waits for room: what is measured is the cost of
 * asking Redis, not queueing), and every key it touches contains `marker`, so the MONITOR count
 * (fleet-redis-count.ts) can tell its commands from anybody else's on a shared Redis.
 *
 *   sluice Governor      `gov.acquire(lane)` then `lease.release()`: the real path (scheduler,
 *                        local mirror, grant.lua by EVALSHA, release.lua sent without waiting)
 *   sluice store         `RedisStore.take` + `confirm` then `give`: the store alone, no
 *                        scheduler or promises of the Governor
 *   sluice scripts       grant.lua + release.lua by EVALSHA on a plain client: the scripts alone
 *   sluice scripts, release heard back   the same with a subscriber on the release channel, as
 *                        every RedisStore has: each release's message comes back to its sender
 *   floor                a 3-line acquire script and a DECR-style release script, both EVALSHA
 *                        and both awaited: the least a Redis semaphore can do per grant + release
 *   floor, release unawaited  the same, the release sent without waiting (what sluice does)
 *   rlf consume+reward   rate-limiter-flexible's RateLimiterRedis: `consume` takes a point,
 *                        `reward` gives it back (a limiter used as a semaphore: the same work)
 *   rlf consume          `consume` alone: what the library is built for (a rate, nothing given back)
 *   bottleneck           Bottleneck with `datastore: "ioredis"` (its Redis clustering),
 *                        `maxConcurrent`; the grant is the job starting, the release its end
 */
import Bottleneck from "bottleneck";
import { Redis } from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import { Path } from "../src/core/path.js";
import { DEFAULT_RANK } from "../src/core/priority.js";
import { Governor } from "../src/governor/governor.js";
import { RedisStore } from "../src/store/redis/redis-store.js";
import { runScript } from "../src/store/redis/scripts.js";

/** Gives the slot back; a promise when the library's release waits for Redis. */
export type Release = () => unknown;

export interface Contender {
  readonly name: string;
  /** Whether its release waits for a Redis reply before the caller goes on. */
  readonly releaseAwaited: boolean;
  /** Resolves once the caller holds a slot. */
  acquire(): Promise<Release>;
  close(): Promise<void>;
}

export interface ContenderSpec {
  name: string;
  make(url: string, marker: string, limit: number): Promise<Contender>;
}

/** RESP2 (ioredis 6 defaults to RESP3; the store uses RESP2), failing fast as the store does. */
export function client(url: string): Redis {
  const c = new Redis(url, { protocol: 2, maxRetriesPerRequest: 1, lazyConnect: false });
  c.on("error", () => {});
  return c;
}

const sluiceGovernor: ContenderSpec = {
  name: "sluice Governor",
  async make(url, marker, limit) {
    const store = new RedisStore({ url, prefix: `${marker}-gov`, replica: "bench" });
    await store.start();
    const gov = new Governor({
      lanes: { bench: { limit, reserve: 0, queueLimit: limit, queueTimeoutMs: 30_000 } },
      store,
    });
    return {
      name: this.name,
      releaseAwaited: false,
      acquire: async () => {
        const lease = await gov.acquire("bench");
        return () => lease.release();
      },
      close: async () => {
        gov.close();
        await store.close();
      },
    };
  },
};

const sluiceStore: ContenderSpec = {
  name: "sluice store",
  async make(url, marker, limit) {
    const store = new RedisStore({ url, prefix: `${marker}-store`, replica: "bench" });
    await store.start();
    const path = new Path("bench", [store.concurrency("lane:bench", limit, 0, "bench")], 1, null);
    const now = () => performance.now();
    return {
      name: this.name,
      releaseAwaited: false,
      acquire: async () => {
        // The Governor's two phases without the Governor: the local take, then the fleet's word.
        if (!store.take(path, DEFAULT_RANK, 1, now())) throw new Error("local budget full");
        if (!(await store.confirm(path, DEFAULT_RANK))) {
          store.rollback(path, 1, now());
          throw new Error("the fleet refused a grant under its limit");
        }
        return () => store.give(path, 1, now());
      },
      close: () => store.close(),
    };
  },
};

/**
 * sluice's own scripts (grant.lua, release.lua) by EVALSHA on a plain client, with no store around
 * them: what the scripts cost against the floor's, apart from the store's JavaScript and its
 * auto-pipelining. With `hear`, a second connection subscribes to the release channel as every
 * RedisStore does, so each release's message comes back to the process that sent it: what
 * hearing one's own releases costs.
 */
function sluiceScripts(name: string, hear: boolean): ContenderSpec {
  return {
    name,
    async make(url, marker, limit) {
      const c = client(url);
      const tag = `{${marker}-scripts${hear ? "-heard" : ""}}`;
      const replicas = `${tag}:replicas`;
      const budget = `${tag}:b:lane:bench`;
      const channel = `${tag}:released`;
      const waiting = `${tag}:waiting`;
      const replica = "bench";
      const subscriber = hear ? client(url) : undefined;
      if (subscriber !== undefined) {
        await subscriber.subscribe(channel);
        // What RedisStore does with a message: whose release it was, then nothing for its own.
        subscriber.on("message", (_channel: string, message: string) => {
          if (message.split("\n")[0] === replica) return;
        });
      }
      await runScript(c, "heartbeat", [replicas, budget], [replica, 3_600_000, 0]);
      return {
        name,
        releaseAwaited: false,
        acquire: async () => {
          const reply = (await runScript(c, "grant", [replicas, budget], [replica, limit])) as number[];
          if (reply[0]! < 0) throw new Error("sluice scripts: no room");
          // The store's release: one slot back, published only when another replica waits.
          return () => void runScript(c, "release", [waiting, budget], [replica, channel, 1]).catch(() => {});
        },
        close: async () => {
          subscriber?.disconnect();
          await c.del(replicas, budget);
          await c.quit();
        },
      };
    },
  };
}

/** The floor's scripts: a counter under a limit, and the counter given back (never below zero). */
const FLOOR_ACQUIRE = `local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return 0 end
redis.call('INCR', KEYS[1])
return 1`;
const FLOOR_RELEASE = `if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
return 1`;

function floor(name: string, awaitRelease: boolean): ContenderSpec {
  return {
    name,
    async make(url, marker, limit) {
      const c = client(url);
      const [acquireSha, releaseSha] = (await Promise.all([
        c.script("LOAD", FLOOR_ACQUIRE),
        c.script("LOAD", FLOOR_RELEASE),
      ])) as [string, string];
      const key = `{${marker}-floor}:count`;
      return {
        name,
        releaseAwaited: awaitRelease,
        acquire: async () => {
          if ((await c.evalsha(acquireSha, 1, key, limit)) !== 1) throw new Error("floor: no room");
          if (awaitRelease) return () => c.evalsha(releaseSha, 1, key);
          return () => void c.evalsha(releaseSha, 1, key).catch(() => {});
        },
        close: async () => {
          await c.del(key);
          await c.quit();
        },
      };
    },
  };
}

function rlf(name: string, reward: boolean): ContenderSpec {
  return {
    name,
    async make(url, marker, limit) {
      const c = client(url);
      // A window far longer than the run: `points` is a concurrency bound when every consume is
      // rewarded back, as a semaphore would be.
      const limiter = new RateLimiterRedis({
        storeClient: c,
        keyPrefix: `${marker}-rlf-${reward ? "reward" : "consume"}`,
        points: reward ? limit : 1e12,
        duration: 3600,
      });
      return {
        name,
        releaseAwaited: reward,
        acquire: async () => {
          try {
            await limiter.consume("bench", 1);
          } catch (refusal) {
            // A refused consume still counted its point (a rate limiter's rule): a semaphore built
            // on it gives that point back, or the count creeps up until every consume is refused.
            if (reward) await limiter.reward("bench", 1);
            throw refusal;
          }
          return reward ? () => limiter.reward("bench", 1) : () => undefined;
        },
        close: async () => {
          await limiter.delete("bench");
          await c.quit();
        },
      };
    },
  };
}

const bottleneck: ContenderSpec = {
  name: "bottleneck",
  async make(url, marker, limit) {
    const connection = new Bottleneck.IORedisConnection({ client: client(url), Redis });
    connection.on("error", () => {});
    const limiter = new Bottleneck({
      id: `${marker}-bottleneck`,
      datastore: "ioredis",
      connection,
      maxConcurrent: limit,
      clearDatastore: true,
    });
    await limiter.ready();
    return {
      name: this.name,
      releaseAwaited: true,
      acquire: () =>
        new Promise<Release>((granted, refused) => {
          // The job's start is the grant; its end is the release, and the schedule() promise
          // settles once Bottleneck has told Redis the slot is free.
          let end: () => void = () => {};
          const ran = new Promise<void>((resolve) => {
            end = resolve;
          });
          const scheduled: Promise<void> = limiter.schedule(() => {
            granted(() => {
              end();
              return scheduled;
            });
            return ran;
          });
          scheduled.catch(refused);
        }),
      close: async () => {
        await limiter.disconnect(true);
        // A connection passed in is the caller's to close (Bottleneck leaves it open).
        await connection.disconnect(true);
      },
    };
  },
};

export const CONTENDERS: readonly ContenderSpec[] = [
  sluiceGovernor,
  sluiceStore,
  sluiceScripts("sluice scripts", false),
  sluiceScripts("sluice scripts, release heard back", true),
  floor("floor (EVALSHA pair)", true),
  floor("floor, release unawaited", false),
  rlf("rlf consume+reward", true),
  rlf("rlf consume only", false),
  bottleneck,
];

/** Deletes every key under `{marker…}` left behind (a crash mid-run, bottleneck's settings). */
export async function cleanUp(url: string, marker: string): Promise<number> {
  const c = client(url);
  let removed = 0;
  try {
    for (const pattern of [`{${marker}*`, `${marker}*`, `b_${marker}*`]) {
      let cursor = "0";
      do {
        const [next, keys] = await c.scan(cursor, "MATCH", pattern, "COUNT", 1000);
        cursor = next;
        if (keys.length > 0) removed += await c.del(...keys);
      } while (cursor !== "0");
    }
  } finally {
    await c.quit();
  }
  return removed;
}
