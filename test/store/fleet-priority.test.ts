/**
 * Priority across replicas (DESIGN §5): an interactive waiter on one replica is granted before a
 * bulk waiter on another that arrived later. Each replica advertises its waiters per class in
 * `{P}:w:<budget>`; the grant script leaves room for the better ones of other replicas. The
 * advertisement goes as soon as the waiters leave, and stops counting with the replica's lease.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { Lease } from "../../src/core/lease.js";
import type { GovernorOptions } from "../../src/core/options.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const stores: RedisStore[] = [];
after(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

async function replica(prefix: string, name: string, options: GovernorOptions, ttlMs = 15_000) {
  const store = new RedisStore({ url: REDIS_URL, prefix, replica: name, leaseTtlMs: ttlMs });
  stores.push(store);
  await store.start();
  return { store, gov: new Governor({ ...options, store }) };
}

const oneSlot = (queueTimeoutMs = 10_000): GovernorOptions => ({
  lanes: { chat: { limit: 1, reserve: 0, queueLimit: 10, queueTimeoutMs, agingMs: 60_000 } },
});

/** The counts per class of an advertisement ("i d b"), without the flows' lines after them. */
const countsOf = (value: string | null): string | null => (value === null ? null : value.split("\n")[0]!);

const until = async (what: string, ok: () => boolean | Promise<boolean>, ms = 3000) => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe("priority across replicas", () => {
  test("A releases its slot: B's interactive waiter is granted before A's later bulk waiter", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    const prefix = uniquePrefix();
    const waitKey = `{${prefix}}:w:lane:chat`;
    const a = await replica(prefix, "a", oneSlot());
    const b = await replica(prefix, "b", oneSlot());
    const held = await a.gov.acquire("chat");
    const order: string[] = [];
    const interactive = b.gov.acquire("chat", { priority: "interactive" }).then((l) => {
      order.push("b:interactive");
      return l;
    });
    await until(
      "b advertises its interactive waiter",
      async () => countsOf(await redis.hget(waitKey, "b")) === "1 0 0",
    );
    const bulk = a.gov.acquire("chat", { priority: "bulk" }).then((l) => {
      order.push("a:bulk");
      return l;
    });
    await until(
      "a advertises its bulk waiter",
      async () => countsOf(await redis.hget(waitKey, "a")) === "0 0 1",
    );
    held.release();
    const first = await interactive;
    assert.deepEqual(order, ["b:interactive"], "the interactive call on b goes first");
    await until(
      "b's advertisement is gone once granted",
      async () => (await redis.hget(waitKey, "b")) === null,
    );
    first.release();
    (await bulk).release();
    assert.deepEqual(order, ["b:interactive", "a:bulk"]);
    await until("a's advertisement is gone", async () => (await redis.exists(waitKey)) === 0);
    redis.disconnect();
  });

  test("an advertisement goes when its waiter is cancelled or times out", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    const prefix = uniquePrefix();
    const waitKey = `{${prefix}}:w:lane:chat`;
    const a = await replica(prefix, "a", oneSlot(300));
    const held = await a.gov.acquire("chat");
    const controller = new AbortController();
    const aborted = a.gov.acquire("chat", { priority: "default", signal: controller.signal });
    await until("advertised", async () => countsOf(await redis.hget(waitKey, "a")) === "0 1 0");
    controller.abort(new Error("caller gone"));
    await assert.rejects(aborted, /caller gone/);
    await until("gone after the abort", async () => (await redis.hget(waitKey, "a")) === null);
    const timedOut = a.gov.acquire("chat", { priority: "bulk" });
    await until("advertised again", async () => countsOf(await redis.hget(waitKey, "a")) === "0 0 1");
    await assert.rejects(timedOut, (e: Error) => e.name === "QueueTimeoutError");
    await until("gone after the timeout", async () => (await redis.hget(waitKey, "a")) === null);
    held.release();
    redis.disconnect();
  });

  test("a dead replica's interactive waiter stops holding back a bulk call once its lease expires", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    const prefix = uniquePrefix();
    const waitKey = `{${prefix}}:w:lane:chat`;
    const a = await replica(prefix, "a", oneSlot(), 300);
    const b = await replica(prefix, "b", oneSlot(), 300);
    const held = await a.gov.acquire("chat");
    void b.gov.acquire("chat", { priority: "interactive" }).catch(() => {});
    await until("b advertises", async () => countsOf(await redis.hget(waitKey, "b")) === "1 0 0");
    await b.store.close(); // b dies: no heartbeat, its advertisement stays in Redis
    b.gov.close(); // (and its queue timer with it, so the test process ends at once)
    let granted: Lease | undefined;
    void a.gov.acquire("chat", { priority: "bulk" }).then((l) => {
      granted = l;
    });
    held.release();
    await until("a's bulk call granted once b's lease expired", () => granted !== undefined);
    assert.equal(await redis.hget(waitKey, "b"), null, "the grant script dropped the dead replica's field");
    granted!.release();
    redis.disconnect();
  });

  test("an interactive arrival granted the reserve slot past waiting bulk calls is confirmed once", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    const prefix = uniquePrefix();
    const a = await replica(prefix, "a", {
      lanes: { chat: { limit: 2, reserve: 1, queueLimit: 10, queueTimeoutMs: 10_000 } },
    });
    const bulk = await a.gov.acquire("chat", { priority: "bulk" });
    const waiting = a.gov.acquire("chat", { priority: "bulk" }); // the free slot is the reserve
    await until(
      "the bulk call advertised",
      async () => countsOf(await redis.hget(`{${prefix}}:w:lane:chat`, "a")) === "0 0 1",
    );
    // admit's own pass grants this arrival; the Governor must not ask the fleet a second time.
    const interactive = await a.gov.acquire("chat", { priority: "interactive" });
    await a.store.heartbeat(); // every grant asked before it has been answered
    assert.equal(await redis.hget(`{${prefix}}:b:lane:chat`, "a"), "2", "Redis counts the 2 calls once each");
    assert.equal(a.gov.snapshot().lanes[0]!.inflight, 2);
    bulk.release();
    interactive.release(); // the bulk waiter fits once the reserve's call is gone too
    (await waiting).release();
    redis.disconnect();
  });
});
