/**
 * Fairness across replicas within a class (issue 22, defect 5): two replicas with equal offered
 * load on one shared lane get equal service. Before the fix, the replica whose call ended granted
 * its own next waiter in the same event-loop turn, before the release reached the other replica
 * (a message away), so whoever held the slots kept them: 23 completions against 87 with 10
 * looping callers each. Counted at the far end: a real HTTP pod counts each replica's calls
 * (a header names the replica) and the most it ever has in flight.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, describe, test } from "node:test";
import { request } from "undici";
import type { Lease } from "../../src/core/lease.js";
import type { GovernorOptions } from "../../src/core/options.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { closeAndClean, REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const LIMIT = 6;
const SERVICE_MS = 40;

const stores: RedisStore[] = [];
const prefixes: string[] = [];
const servers: Server[] = [];
after(async () => {
  for (const s of servers) s.close();
  await closeAndClean(stores, prefixes, null);
});

/** The pod: answers after SERVICE_MS, counts completions per replica and the most in flight. */
async function pod(): Promise<{ url: string; done: Map<string, number>; peak: () => number }> {
  const done = new Map<string, number>();
  let inflight = 0;
  let peak = 0;
  const server = createServer((req, res) => {
    inflight++;
    peak = Math.max(peak, inflight);
    const replica = String(req.headers["x-replica"]);
    setTimeout(() => {
      inflight--;
      done.set(replica, (done.get(replica) ?? 0) + 1);
      res.end("ok");
    }, SERVICE_MS);
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, done, peak: () => peak };
}

async function replica(prefix: string, name: string, podUrl: string): Promise<Governor> {
  const store = new RedisStore({ url: REDIS_URL, prefix, replica: name, leaseTtlMs: 3_000 });
  stores.push(store);
  await store.start();
  const options: GovernorOptions = {
    lanes: {
      chat: {
        limit: LIMIT,
        reserve: 0,
        queueLimit: 64,
        queueTimeoutMs: 30_000,
        pods: [{ id: podUrl, maxInflight: LIMIT }],
        adaptive: false,
      },
    },
  };
  return new Governor({ ...options, store });
}

/** `callers` loops on `gov` until `until`: acquire, call the pod, release. */
async function load(gov: Governor, name: string, podUrl: string, callers: number, until: number) {
  const loop = async () => {
    while (Date.now() < until) {
      const lease = await gov.acquire("chat");
      try {
        const res = await request(podUrl, { headers: { "x-replica": name } });
        await res.body.text();
      } finally {
        lease.release();
      }
    }
  };
  await Promise.all(Array.from({ length: callers }, loop));
}

describe("fairness across replicas", () => {
  test("two replicas, 10 looping callers each on a lane of 6: completions at the pod within ±20 %", async (t) => {
    const probe = await redisOrSkip(t);
    if (probe === null) return;
    probe.disconnect();
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const far = await pod();
    const a = await replica(prefix, "a", far.url);
    const b = await replica(prefix, "b", far.url);
    const until = Date.now() + 4_000;
    await Promise.all([load(a, "a", far.url, 10, until), load(b, "b", far.url, 10, until)]);
    const [na, nb] = [far.done.get("a") ?? 0, far.done.get("b") ?? 0];
    assert.ok(far.peak() <= LIMIT, `the pod never saw more than ${LIMIT} (saw ${far.peak()})`);
    const mean = (na + nb) / 2;
    assert.ok(
      Math.abs(na - mean) <= 0.2 * mean,
      `equal load, equal service: a ${na}, b ${nb} completions (within ±20 % of ${mean})`,
    );
  });

  test("a slot freed on the replica past its share goes to the other replica's waiter, not its own", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const far = await pod();
    const a = await replica(prefix, "a", far.url);
    const b = await replica(prefix, "b", far.url);
    try {
      // Nobody waits yet: A takes 4 of the lane's 6, B 2. Then one more waits on each.
      const onA = await Promise.all(Array.from({ length: 4 }, () => a.acquire("chat")));
      const onB = await Promise.all(Array.from({ length: 2 }, () => b.acquire("chat")));
      const outcome: string[] = [];
      const noted = (who: string) => (l: Lease) => {
        outcome.push(who);
        return l;
      };
      const waiterA = a.acquire("chat").then(noted("a"));
      const waiterB = b.acquire("chat").then(noted("b"));
      const waitKey = `{${prefix}}:w:lane:chat`;
      const end = Date.now() + 10_000;
      while ((await redis.hget(waitKey, "a")) === null || (await redis.hget(waitKey, "b")) === null) {
        assert.ok(Date.now() < end, "both waiters advertised");
        await new Promise((r) => setTimeout(r, 5));
      }
      // A's call ends: A holds 3, its share of 6 while B waits; the slot is B's.
      onA[0]!.release();
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`B's waiter not granted within 5 s (granted: ${outcome})`)),
          5_000,
        );
      });
      const granted = await Promise.race([waiterB, bound]).finally(() => clearTimeout(timer));
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(outcome, ["b"], "B's waiter got the slot; A's still waits");
      // B's call ends, and B has nobody waiting any more: the lane is A's waiter's again.
      granted.release();
      const late = await waiterA;
      assert.deepEqual(outcome, ["b", "a"]);
      for (const l of [...onA.slice(1), ...onB, late]) l.release();
    } finally {
      redis.disconnect();
    }
  });
});
