/**
 * Per-key bounds across replicas: two Governors, each with its own RedisStore on one Redis. A
 * key's calls spread over both never exceed its bound (in flight + queued): counted at the far end
 * (the leases its callers hold at once), in both replicas' snapshots, and in Redis. A replica
 * whose mirror does not know yet what the other took passes its own check, and Redis refuses the
 * arrival (KeyLimitError) before its caller has a lease; once it has heard, the pre-body
 * `checkKey` refuses at once. Every slot goes back when the calls end or leave their queue. And a
 * property: random arrivals, releases and aborts on both replicas never leave Redis or the far
 * end above the bound, and leave nothing counted once every call ended.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import fc from "fast-check";
import { KeyLimitError } from "../../src/core/errors.js";
import type { Lease } from "../../src/core/lease.js";
import type { GovernorOptions } from "../../src/core/options.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { flush } from "../helpers/index.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const stores: RedisStore[] = [];
const clients: { disconnect(): void }[] = [];
after(async () => {
  await Promise.all(stores.map((s) => s.close()));
  for (const c of clients) c.disconnect(); // also when a test failed before its own close
});

const BOUND = 3;

async function fleet(t: { skip(m: string): void }, laneLimit: number) {
  const redis = await redisOrSkip(t as never);
  if (redis === null) return null;
  clients.push(redis);
  const prefix = uniquePrefix();
  const options: GovernorOptions = {
    lanes: { chat: { limit: laneLimit, reserve: 0, queueLimit: 20, queueTimeoutMs: 30_000 } },
    keys: { team: { maxInflight: BOUND } },
  };
  const make = async (replica: string) => {
    const store = new RedisStore({ url: REDIS_URL, prefix, replica, leaseTtlMs: 15_000 });
    stores.push(store);
    await store.start();
    return { store, gov: new Governor({ ...options, store }) };
  };
  const replicas = [await make("a"), await make("b")] as const;
  const key = `{${prefix}}:b:key:team`;
  /** What Redis counts on the key, all replicas together. */
  const counted = async () => Object.values(await redis.hgetall(key)).reduce((sum, n) => sum + Number(n), 0);
  /** In flight + queued on the key, both replicas' snapshots together. */
  const held = () =>
    replicas
      .flatMap(({ gov }) => gov.snapshot().keys)
      .reduce((sum, k) => sum + k.inflight + (k.queued ?? 0), 0);
  return { replicas, counted, held, close: () => redis.disconnect() };
}

type Settled = { lease: Lease } | { error: unknown };
const settle = (p: Promise<Lease>): Promise<Settled> =>
  p.then(
    (lease) => ({ lease }),
    (error: unknown) => ({ error }),
  );

/** Until the turn's scripts (releases, arrivals) have reached Redis and been answered. */
const drained = async (stores: readonly RedisStore[]) => {
  await flush();
  await Promise.all(stores.map((s) => s.heartbeat()));
};

describe("per-key bounds across two replicas", { timeout: 60_000 }, () => {
  test("a burst on both replicas: exactly the bound is held at the far end, the rest refused with key_limit", async (t) => {
    const f = await fleet(t, 20); // the lane has room for all: only the key bounds them
    if (f === null) return;
    const [a, b] = f.replicas;
    const burst = [
      ...Array.from({ length: 6 }, () => a.gov.acquire("chat", { key: "team" })),
      ...Array.from({ length: 6 }, () => b.gov.acquire("chat", { key: "team" })),
    ].map(settle);
    const results = await Promise.all(burst);
    const leases = results.flatMap((r) => ("lease" in r ? [r.lease] : []));
    const refusals = results.flatMap((r) => ("error" in r ? [r.error] : []));
    assert.equal(leases.length, BOUND, "the far end holds exactly the bound, both replicas together");
    assert.ok(
      refusals.every((e) => e instanceof KeyLimitError),
      refusals.map((e) => String(e)).join("; "),
    );
    assert.equal(await f.counted(), BOUND, "Redis counts the bound");
    assert.equal(f.held(), BOUND, "and so do the replicas' snapshots");
    // With the bound full, a new arrival is refused at once, naming what each side holds.
    const here = leases.length; // some on a, some on b
    const refusedOnA = (await a.gov.acquire("chat", { key: "team" }).catch((e) => e)) as KeyLimitError;
    const refusedOnB = (await b.gov.acquire("chat", { key: "team" }).catch((e) => e)) as KeyLimitError;
    for (const r of [refusedOnA, refusedOnB]) {
      assert.ok(r instanceof KeyLimitError, String(r));
      assert.equal(
        r.inflight + r.queued + r.elsewhere,
        here,
        `the whole fleet's ${here} calls: ${r.message}`,
      );
    }
    assert.ok(
      [refusedOnA, refusedOnB].some((r) => r.elsewhere > 0 && /on other replicas/.test(r.message)),
      "the other replicas' calls are named",
    );
    for (const l of leases) l.release();
    await drained([a.store, b.store]);
    assert.equal(await f.counted(), 0, "every slot given back");
    assert.equal(f.held(), 0);
    f.close();
  });

  test("queued calls count too: in flight + queued across replicas never above the bound, and slots come back as calls end or leave", async (t) => {
    const f = await fleet(t, 1); // one call in flight fleet-wide: the key's other calls queue
    if (f === null) return;
    const [a, b] = f.replicas;
    const stores = [a.store, b.store];
    const first = await a.gov.acquire("chat", { key: "team" }); // in flight on a
    const abort = new AbortController();
    const calls = [settle(b.gov.acquire("chat", { key: "team", signal: abort.signal }))]; // queued on b
    await drained(stores);
    calls.push(settle(a.gov.acquire("chat", { key: "team" }))); // queued on a
    await drained(stores);
    assert.equal(await f.counted(), BOUND, "Redis: one in flight and two queued, both replicas together");
    assert.equal(f.held(), BOUND, "the snapshots agree");
    assert.ok(a.gov.checkKey("team") instanceof KeyLimitError, "the pre-body check refuses on a");
    assert.ok(b.gov.checkKey("team") instanceof KeyLimitError, "and on b, from what it heard of a");
    const over = await settle(b.gov.acquire("chat", { key: "team" }));
    assert.ok("error" in over && over.error instanceof KeyLimitError, "a fourth call is refused");

    abort.abort(new Error("caller went away"));
    await drained(stores);
    assert.equal(await f.counted(), BOUND - 1, "the aborted waiter's slot is back in Redis");
    // A waiter that leaves before Redis answered its arrival: its slot comes back once it has.
    const gone = new AbortController();
    const left = settle(b.gov.acquire("chat", { key: "team", signal: gone.signal }));
    gone.abort(new Error("left at once"));
    assert.ok("error" in (await left));
    await drained(stores);
    assert.equal(await f.counted(), BOUND - 1, "no slot kept for it");
    calls.push(settle(b.gov.acquire("chat", { key: "team" }))); // so it is admitted now
    await drained(stores);
    assert.equal(await f.counted(), BOUND);

    // Serve them one by one: never above the bound, at the far end, in the snapshots or in Redis.
    first.release();
    let served = 1;
    // In the order they are granted: whichever replica's waiter Redis grants first.
    const ended: string[] = [];
    const pending = new Map(calls.map((call, i) => [i, call]));
    while (pending.size > 0) {
      const [i, done] = await Promise.race(
        [...pending].map(([i, call]) => call.then((r) => [i, r] as const)),
      );
      pending.delete(i);
      ended.push("lease" in done ? "lease" : String(done.error));
      if (!("lease" in done)) continue;
      served++;
      assert.ok(f.held() <= BOUND && (await f.counted()) <= BOUND);
      done.lease.release();
    }
    assert.equal(served, BOUND, `the first call, a's waiter and b's second waiter: ${ended.join("; ")}`);
    await drained(stores);
    assert.equal(await f.counted(), 0, "every slot given back");
    assert.equal(f.held(), 0);
    f.close();
  });

  test("property: random arrivals, releases and aborts on two replicas never go above the bound and leave nothing counted", async (t) => {
    const redis = await redisOrSkip(t as never);
    if (redis === null) return;
    clients.push(redis);
    type Op = { t: "acquire"; replica: 0 | 1 } | { t: "release" | "abort"; pick: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 5,
        arbitrary: fc.record({
          t: fc.constant("acquire" as const),
          replica: fc.constantFrom(0 as const, 1 as const),
        }),
      },
      { weight: 3, arbitrary: fc.record({ t: fc.constant("release" as const), pick: fc.nat(20) }) },
      { weight: 2, arbitrary: fc.record({ t: fc.constant("abort" as const), pick: fc.nat(20) }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 30 }), async (ops) => {
        const f = await fleet(t, 2);
        if (f === null) return;
        const stores = f.replicas.map((r) => r.store);
        const held: Lease[] = [];
        const calls: { abort: AbortController; settled: boolean; done: Promise<void> }[] = [];
        for (const o of ops) {
          if (o.t === "acquire") {
            const abort = new AbortController();
            const call = { abort, settled: false, done: Promise.resolve() };
            call.done = f.replicas[o.replica].gov.acquire("chat", { key: "team", signal: abort.signal }).then(
              (lease) => {
                held.push(lease);
                call.settled = true;
              },
              () => {
                call.settled = true;
              },
            );
            calls.push(call);
          } else if (o.t === "release" && held.length > 0) held.splice(o.pick % held.length, 1)[0]!.release();
          else if (o.t === "abort") {
            const open = calls.filter((c) => !c.settled);
            if (open.length > 0) open[o.pick % open.length]!.abort.abort(new Error("aborted"));
          }
          await new Promise((r) => setTimeout(r, 5));
          assert.ok(held.length <= BOUND, `${held.length} leases held at the far end`);
          assert.ok((await f.counted()) <= BOUND, "Redis never counts more than the bound");
        }
        for (let round = 0; round < 100 && (held.length > 0 || calls.some((c) => !c.settled)); round++) {
          for (const l of held.splice(0)) l.release();
          await new Promise((r) => setTimeout(r, 10));
        }
        assert.ok(
          calls.every((c) => c.settled),
          "every call was served or refused",
        );
        await drained(stores);
        assert.equal(await f.counted(), 0, "nothing left counted in Redis");
        assert.equal(f.held(), 0);
        f.close();
      }),
      { numRuns: 10 },
    );
    redis.disconnect();
  });
});
