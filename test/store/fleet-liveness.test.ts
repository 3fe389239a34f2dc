/**
 * Liveness across a fleet (issue 22, defect 1): no waiter waits longer than one heartbeat while
 * every budget on its path has room fleet-wide. Two Governors on one Redis share a lane of 6 (pod
 * `maxInflight` 6, reserve 0); three calls on each finish together, then six arrive at A. A's
 * mirror still counts B's three, so its pass grants 3 and queues 3 — and those 3 must be granted
 * as soon as the fleet says B's slots are free. Before the fix, a grant's answer that showed B's
 * release (which published nothing: nobody waited yet) refreshed A's mirror without a pass, the
 * re-read that follows A's first waiter then found nothing "freed", and the 3 stayed queued until
 * their queue timeout.
 *
 * The heartbeat interval is 5 s (lease 15 s) so a waiter rescued by the heartbeat alone still
 * fails the "granted promptly" bound below; 30 rounds on the same replicas let the race show.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { Lease } from "../../src/core/lease.js";
import type { GovernorOptions } from "../../src/core/options.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis.js";
import { closeAndClean, REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const stores: RedisStore[] = [];
const prefixes: string[] = [];
after(() => closeAndClean(stores, prefixes, null));

const options: GovernorOptions = {
  lanes: {
    chat: {
      limit: 6,
      reserve: 0,
      queueLimit: 20,
      queueTimeoutMs: 20_000,
      pods: [{ id: "http://pod:6", maxInflight: 6 }],
      adaptive: false,
    },
  },
};

async function replica(prefix: string, name: string): Promise<{ store: RedisStore; gov: Governor }> {
  const store = new RedisStore({ url: REDIS_URL, prefix, replica: name, leaseTtlMs: 15_000 });
  stores.push(store);
  await store.start();
  return { store, gov: new Governor({ ...options, store }) };
}

/** Resolves with how long `p` took, or rejects naming `what` after `ms`. */
async function within<T>(what: string, p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe("fleet liveness: a waiter is granted once the fleet has room", () => {
  test("six arrive at A right after three on each replica finished: all six granted promptly (30 rounds)", async (t) => {
    const probe = await redisOrSkip(t);
    if (probe === null) return;
    probe.disconnect();
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const a = await replica(prefix, "a");
    const b = await replica(prefix, "b");
    const stuck: string[] = [];
    for (let round = 0; round < 30; round++) {
      const onA = await Promise.all([a.gov.acquire("chat"), a.gov.acquire("chat"), a.gov.acquire("chat")]);
      const onB = await Promise.all([b.gov.acquire("chat"), b.gov.acquire("chat"), b.gov.acquire("chat")]);
      // Both replicas have heard the fleet (6 of 6) before the calls end together.
      await a.store.heartbeat();
      // B's calls end first and reach Redis (publishing nothing: nobody waits), then A's end and
      // six arrive at A while its mirror still counts B's three.
      for (const l of onB) l.release();
      await b.store.heartbeat();
      for (const l of onA) l.release();
      const six = Array.from({ length: 6 }, () => a.gov.acquire("chat"));
      let granted: Lease[] = [];
      try {
        // Well under one heartbeat (5 s): the room is seen by a round trip, not by the poll.
        granted = await within(`round ${round}`, Promise.all(six), 2_500);
      } catch (error) {
        stuck.push((error as Error).message);
        // The heartbeat or the queue timeout ends them; one stuck round is enough to fail.
        for (const r of await Promise.allSettled(six)) if (r.status === "fulfilled") r.value.release();
        break;
      }
      for (const l of granted) l.release();
      await b.store.heartbeat(); // B hears A's releases before the next round
    }
    assert.deepEqual(stuck, [], "every round's six granted promptly");
  });
});
