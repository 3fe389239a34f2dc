/**
 * Releases to the fleet (`src/store/redis/releases.ts`): batched per event-loop turn, published
 * only while another replica waits (the `{P}:waiting` index), and a replica that starts waiting
 * re-reads the fleet. Leases are long here (`leaseTtlMs` 10 minutes: the heartbeat, the polling
 * fallback, never runs during a test), so a wake-up can only come from a message or the re-read;
 * the tests that wait for one carry a generous bound naming it.
 */
import assert from "node:assert/strict";
import { after, describe, type TestContext, test } from "node:test";
import fc from "fast-check";
import type { Redis } from "ioredis";
import type { GovernorOptions } from "../../src/core/options.js";
import { Path } from "../../src/core/path.js";
import { DEFAULT_RANK } from "../../src/core/priority.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { closeAndClean, REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const NO_HEARTBEAT_MS = 600_000;
/** How long a wake-up by message may take on a loaded 2-core machine (it is a few ms). */
const WAKE_BOUND_MS = 20_000;

const stores: RedisStore[] = [];
const prefixes: string[] = [];
let redis: Redis | null = null;
after(() => closeAndClean(stores, prefixes, redis));

async function replica(prefix: string, name: string, options?: GovernorOptions) {
  const store = new RedisStore({ url: REDIS_URL, prefix, replica: name, leaseTtlMs: NO_HEARTBEAT_MS });
  stores.push(store);
  await store.start();
  return { store, gov: options === undefined ? null : new Governor({ ...options, store }) };
}

const lane = (limit: number): GovernorOptions => ({
  lanes: { chat: { limit, reserve: 0, queueLimit: 10, queueTimeoutMs: 60_000 } },
});

/** Every message on the release channel, and a fence: once it is heard, earlier messages were. */
async function listen(prefix: string) {
  const sub = redis!.duplicate();
  const channel = `{${prefix}}:released`;
  const heard: string[] = [];
  let fenced: () => void = () => {};
  sub.on("message", (_c: string, m: string) => {
    if (m === "fence") fenced();
    else heard.push(m);
  });
  await sub.subscribe(channel);
  return {
    heard,
    async fence(): Promise<string[]> {
      const done = new Promise<void>((r) => {
        fenced = r;
      });
      await redis!.publish(channel, "fence");
      await done;
      sub.disconnect();
      return heard;
    },
  };
}

const flushed = (s: RedisStore) => s.heartbeat(); // sends the turn's releases first, then answers

/** A fresh key prefix on the machine's Redis (cleaned up after the file), or null after skipping `t`. */
async function freshPrefix(t: TestContext): Promise<string | null> {
  redis = redis ?? (await redisOrSkip(t));
  if (redis === null) return null;
  const prefix = uniquePrefix();
  prefixes.push(prefix);
  return prefix;
}

/** `p`'s value, or null when it has not settled within a wake-up's bound. */
const woken = <T>(p: Promise<T>): Promise<T | null> =>
  Promise.race([p, new Promise<null>((r) => setTimeout(() => r(null), WAKE_BOUND_MS).unref())]);

describe("fleet releases (real Redis)", () => {
  test("a release while no other replica waits publishes nothing", async (t) => {
    const prefix = await freshPrefix(t);
    if (prefix === null || redis === null) return;
    const a = await replica(prefix, "a", lane(4));
    await replica(prefix, "b", lane(4)); // another replica, idle: it waits for nothing
    const channel = await listen(prefix);
    for (let i = 0; i < 5; i++) (await a.gov!.acquire("chat")).release();
    await flushed(a.store);
    assert.deepEqual(await channel.fence(), [], "no release message reached the channel");
    assert.equal(await redis.hget(`{${prefix}}:b:lane:chat`, "a"), null, "and every slot went back");
  });

  test("a waiter on another replica is woken by a release (the message, not the heartbeat)", async (t) => {
    const prefix = await freshPrefix(t);
    if (prefix === null || redis === null) return;
    const a = await replica(prefix, "a", lane(1));
    const b = await replica(prefix, "b", lane(1));
    const held = await a.gov!.acquire("chat");
    const channel = await listen(prefix);
    const waiting = b.gov!.acquire("chat");
    // B's waiting index entry is written once its waiter is advertised.
    await until("b advertised", async () => (await redis!.zscore(`{${prefix}}:waiting`, "b")) !== null);
    held.release();
    const granted = await woken(waiting);
    assert.ok(granted !== null, "B's waiter was granted after A's release");
    granted.release();
    await flushed(b.store);
    assert.deepEqual(await channel.fence(), [`a\n1 {${prefix}}:b:lane:chat`], "one message: A's release");
    await until("b left the index", async () => (await redis!.zscore(`{${prefix}}:waiting`, "b")) === null);
  });

  test("a replica that starts waiting after a silent release re-reads the fleet and takes the room", async (t) => {
    const prefix = await freshPrefix(t);
    if (prefix === null || redis === null) return;
    const a = await replica(prefix, "a", lane(2));
    const b = await replica(prefix, "b", lane(2));
    const onA = await a.gov!.acquire("chat");
    const onB = await b.gov!.acquire("chat"); // B's mirror: A holds 1
    onA.release(); // nobody waits: published to nobody, B's mirror still says A holds 1
    await flushed(a.store);
    const second = b.gov!.acquire("chat"); // B's mirror says the lane is full: it waits
    const granted = await woken(second);
    assert.ok(granted !== null, "granted from the re-read, without a release message or a heartbeat");
    onB.release();
    granted.release();
  });

  test("a release and the next grant in one turn at the limit: the grant is not refused for the room just given", async (t) => {
    const prefix = await freshPrefix(t);
    if (prefix === null || redis === null) return;
    const a = await replica(prefix, "a", lane(1));
    const first = await a.gov!.acquire("chat");
    const next = a.gov!.acquire("chat"); // queued behind it, in this process
    first.release(); // frees the slot and grants `next` in the same turn
    const granted = await woken(next);
    assert.ok(granted !== null, "the waiter behind the release was granted");
    await flushed(a.store);
    assert.equal(await redis.hget(`{${prefix}}:b:lane:chat`, "a"), "1", "Redis counts the one call held");
    granted.release();
  });

  test("a grant asked before a release of the same turn and refused for its slot is asked again", async (t) => {
    const prefix = await freshPrefix(t);
    if (prefix === null || redis === null) return;
    const r = await replica(prefix, "r", lane(2));
    const o = await replica(prefix, "o", lane(2));
    const first = await r.gov!.acquire("chat"); // its answer: nobody else holds any
    const onO = await o.gov!.acquire("chat"); // unknown to R: the lane is full in Redis
    // One turn: R grants locally (it believes 1 of 2 is held), then gives its first slot back.
    // Redis gets the grant first (full: refused) and the release after it.
    const second = r.gov!.acquire("chat");
    first.release();
    const granted = await woken(second);
    assert.ok(granted !== null, "granted on the second ask, without a heartbeat");
    granted.release();
    onO.release();
  });

  test("releases batched in one turn give back exactly what was taken (property)", async (t) => {
    const prefix = await freshPrefix(t);
    if (prefix === null || redis === null) return;
    const { store } = await replica(prefix, "p");
    const laneBudget = store.concurrency("lane:x", 1_000, 0, "x");
    const group = store.concurrency("group:g", 1_000, 0, "g");
    const paths = [new Path("x", [laneBudget], 1, null), new Path("x", [laneBudget, group], 2, null)];
    const held: Path[] = [];
    const now = () => performance.now();
    // Each step: take some grants (each confirmed with the fleet), then give back some of what is
    // held in one synchronous burst (one turn, so one release call), then check Redis's counts.
    const stepArb = fc.record({ grants: fc.array(fc.nat(1), { maxLength: 6 }), gives: fc.nat(8) });
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 8 }), async (steps) => {
        for (const step of steps) {
          for (const which of step.grants) {
            const path = paths[which]!;
            assert.ok(store.take(path, DEFAULT_RANK, 1, now()));
            assert.ok(await store.confirm(path, DEFAULT_RANK));
            held.push(path);
          }
          for (const path of held.splice(0, Math.min(step.gives, held.length))) store.give(path, 1, now());
          await flushed(store);
          const onLane = held.length;
          const onGroup = held.filter((p) => p.budgets.length === 2).length;
          assert.deepEqual(
            [
              Number((await redis!.hget(`{${prefix}}:b:lane:x`, "p")) ?? 0),
              Number((await redis!.hget(`{${prefix}}:b:group:g`, "p")) ?? 0),
            ],
            [onLane, onGroup],
            "Redis counts exactly the calls held",
          );
        }
      }),
      { numRuns: 25 },
    );
    for (const path of held.splice(0)) store.give(path, 1, now());
    await flushed(store);
    assert.deepEqual(await redis.hgetall(`{${prefix}}:b:lane:x`), {}, "nothing left");
  });
});

async function until(what: string, ok: () => Promise<boolean>, ms = WAKE_BOUND_MS): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
