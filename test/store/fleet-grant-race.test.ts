/**
 * The grant scripts' limit check, raced by two replicas whose mirrors are both stale (issue 22
 * defect 8). Normally each replica's mirror of the fleet refuses a grant at the limit before it
 * reaches Redis, so an off-by-one in `grant.lua` (`>` for `>=`) is caught only by the script's
 * own unit test. Here the mirrors say "room" on both replicas (as each last heard before the
 * other's grants: up to a heartbeat old), both send their grants in the same event-loop turn, and
 * Redis alone decides: the lane holds exactly its limit, never one more, whichever script runs
 * first. One grant per replica per turn runs `grant.lua` (a path without a lane budget: here the
 * admission bound's in flight) or `grant-path.lua` (a lane's, with its waiters hash); two or more
 * in one turn run `grant-many.lua`.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { Redis } from "ioredis";
import type { AdmissionBudget } from "../../src/core/admission.js";
import type { ConcurrencyBudget } from "../../src/core/budget.js";
import { Path } from "../../src/core/path.js";
import { DEFAULT_RANK } from "../../src/core/priority.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { closeAndClean, REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const stores: RedisStore[] = [];
const prefixes: string[] = [];
let redis: Redis | null = null;
after(() => closeAndClean(stores, prefixes, redis));

/** Two replicas on one prefix; leases long enough that no heartbeat refreshes a mirror meanwhile. */
async function replicas(prefix: string): Promise<[RedisStore, RedisStore]> {
  const make = async (replica: string) => {
    const s = new RedisStore({ url: REDIS_URL, prefix, replica, leaseTtlMs: 600_000 });
    stores.push(s);
    await s.start();
    return s;
  };
  return [await make("a"), await make("b")];
}

interface Lane {
  budget: ConcurrencyBudget | AdmissionBudget;
  path: Path;
  key: string;
}

/** A path of one fleet budget: a lane's (its waiters hash makes the grant `grant-path.lua`) or the admission bound's. */
function lane(s: RedisStore, prefix: string, kind: "lane" | "admission", name: string, limit: number): Lane {
  const budget =
    kind === "lane"
      ? s.concurrency(`lane:${name}`, limit, 0, name)
      : s.admission(`adm:${name}`, limit, 100, name);
  const key = `{${prefix}}:b:${kind === "lane" ? "lane" : "adm"}:${name}`;
  return { budget, key, path: new Path(name, [budget], 1, null) };
}

/** `n` grants taken locally and sent to Redis in this synchronous run (one turn, one script). */
function ask(s: RedisStore, l: Lane, n: number): Promise<boolean>[] {
  const now = performance.now();
  const asks: Promise<boolean>[] = [];
  for (let i = 0; i < n; i++) {
    assert.ok(s.take(l.path, DEFAULT_RANK, 1, now), "the (stale) mirror has room");
    asks.push(s.confirm(l.path, DEFAULT_RANK));
  }
  return asks;
}

/** Rolls back each refused grant locally (what the scheduler does), so the mirror is honest again. */
function settle(s: RedisStore, l: Lane, answers: boolean[]): number {
  for (const granted of answers) if (!granted) s.rollback(l.path, 1, performance.now());
  return answers.filter(Boolean).length;
}

async function held(key: string): Promise<number> {
  const fields = await redis!.hgetall(key);
  return Object.values(fields).reduce((sum, n) => sum + Number(n), 0);
}

describe("two replicas race grants at the limit with stale mirrors (real Redis)", () => {
  for (const [kind, perReplica, script] of [
    ["admission", 1, "grant.lua"],
    ["lane", 1, "grant-path.lua"],
    ["admission", 2, "grant-many.lua"],
    ["lane", 2, "grant-many.lua (ranked)"],
  ] as const) {
    test(`${script}: Redis grants exactly the room left, whichever replica's script runs first`, async (t) => {
      redis = redis ?? (await redisOrSkip(t));
      if (redis === null) return;
      const prefix = uniquePrefix();
      prefixes.push(prefix);
      const [a, b] = await replicas(prefix);
      const limit = 4;
      // Every split of the room: A and B hold some, then both ask for more together.
      for (let round = 0; round < 24; round++) {
        const name = `race${round}`;
        const [la, lb] = [lane(a, prefix, kind, name, limit), lane(b, prefix, kind, name, limit)];
        const key = la.key;
        const heldByA = round % limit;
        const heldByB = Math.floor(round / limit) % (limit - heldByA);
        assert.equal(settle(a, la, await Promise.all(ask(a, la, heldByA))), heldByA);
        assert.equal(settle(b, lb, await Promise.all(ask(b, lb, heldByB))), heldByB);
        const room = limit - heldByA - heldByB;
        // Stale: each mirror as it was before the other replica's grants (a heartbeat behind).
        la.budget.others = 0;
        lb.budget.others = 0;
        // Each asks for all its mirror shows (one grant each for grant.lua): together more than the room.
        const [askA, askB] = perReplica === 1 ? [1, 1] : [limit - heldByA, limit - heldByB];
        const answers = await Promise.all([...ask(a, la, askA), ...ask(b, lb, askB)]);
        const [gotA, gotB] = [settle(a, la, answers.slice(0, askA)), settle(b, lb, answers.slice(askA))];
        const granted = gotA + gotB;
        assert.equal(granted, Math.min(room, askA + askB), `round ${round}: A held ${heldByA}, B ${heldByB}`);
        assert.equal(
          await held(key),
          heldByA + heldByB + granted,
          `round ${round}: Redis counts what was granted`,
        );
        assert.ok((await held(key)) <= limit, `round ${round}: never above the limit`);
        // Fill what is left, then both at the limit with stale mirrors again: Redis refuses every one.
        const left = limit - (await held(key));
        if (left > 0) assert.equal(settle(a, la, await Promise.all(ask(a, la, left))), left);
        la.budget.others = 0;
        lb.budget.others = 0;
        const moreA = Math.min(perReplica, limit - la.budget.inflight);
        const moreB = Math.min(perReplica, limit - lb.budget.inflight);
        assert.ok(moreA + moreB > 0, "one replica's mirror still shows room");
        const late = await Promise.all([...ask(a, la, moreA), ...ask(b, lb, moreB)]);
        assert.deepEqual(
          late,
          new Array(late.length).fill(false),
          `round ${round}: at the limit, all refused`,
        );
        settle(a, la, late.slice(0, moreA));
        settle(b, lb, late.slice(moreA));
        assert.equal(await held(key), limit, `round ${round}: still exactly the limit`);
      }
    });
  }
});
