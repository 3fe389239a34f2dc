/**
 * Replica clocks seconds apart (DESIGN §5): two Governors on one Redis, each with its own manual
 * clock, one ahead of the other by seconds in either direction and running faster. Fleet counts
 * and leases live in Redis time (`TIME` inside the scripts), so the skew changes nothing there:
 * no grant past the shared limit, a slow replica's calls still count long after the fast
 * replica's clock has passed the skew and the lease TTL, aging on a fast clock does not unlock
 * the interactive reserve fleet-wide, and a breaker shared between them keeps its cooldown.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { ManualClock } from "../../src/core/clock.js";
import type { Lease } from "../../src/core/lease.js";
import type { GovernorOptions } from "../../src/core/options.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const stores: RedisStore[] = [];
after(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

const START = 1_000_000;

/** Replicas `a` (clock at START) and `b` (clock at START + skewMs) on one fleet prefix. */
async function skewedFleet(
  skewMs: number,
  options: GovernorOptions,
  leaseTtlMs = 15_000,
  prefix = uniquePrefix(),
) {
  const make = async (replica: string, clock: ManualClock) => {
    const store = new RedisStore({ url: REDIS_URL, prefix, replica, leaseTtlMs });
    stores.push(store);
    await store.start();
    return { store, clock, gov: new Governor({ ...options, store, clock }) };
  };
  return [await make("a", new ManualClock(START)), await make("b", new ManualClock(START + skewMs))] as const;
}

const until = async (what: string, ok: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

/** Real time for the fleet to answer: Redis round trips and pub/sub, not the replicas' clocks. */
const settle = (ms = 200) => new Promise((r) => setTimeout(r, ms));

const inflight = (...govs: Governor[]) => govs.reduce((n, g) => n + g.snapshot().lanes[0]!.inflight, 0);

const SKEWS = [7_000, -7_000];

describe("replica clocks seconds apart", () => {
  for (const skew of SKEWS)
    test(`no grant past the shared limit with b's clock ${skew > 0 ? "ahead" : "behind"} by ${Math.abs(skew) / 1000} s and running 10× fast`, async (t) => {
      const probe = await redisOrSkip(t);
      if (probe === null) return;
      t.after(() => probe.disconnect());
      const prefix = uniquePrefix();
      const [a, b] = await skewedFleet(
        skew,
        { lanes: { chat: { limit: 3, reserve: 0, queueLimit: 20, queueTimeoutMs: 3_600_000 } } },
        15_000,
        prefix,
      );
      const held: Lease[] = [];
      const calls = Array.from({ length: 12 }, (_, i) =>
        (i % 2 === 0 ? a : b).gov.acquire("chat").then((l) => {
          held.push(l);
          return l;
        }),
      );
      await until("the first three grants", () => held.length === 3);
      await settle();
      assert.equal(held.length, 3, "3 across both replicas");
      let released = 0;
      while (held.length < 12) {
        a.clock.advance(1_000);
        b.clock.advance(10_000); // b's clock runs ten times as fast as a's
        held[released++]!.release();
        const before = held.length;
        await until(`grant ${before + 1}`, () => held.length > before);
        // Leases handed out and not released; a replica's local count can also hold a take
        // still being confirmed, which Redis may refuse, so it is not the measure.
        assert.ok(held.length - released <= 3, `at most 3 granted at once, saw ${held.length - released}`);
        const counts = Object.values(await probe.hgetall(`{${prefix}}:b:lane:chat`));
        const inRedis = counts.reduce((n, c) => n + Number(c), 0);
        assert.ok(inRedis <= 3, `at most 3 counted in Redis, saw ${inRedis}`);
      }
      for (const l of held) l.release();
      await Promise.all(calls);
    });

  test("a slow replica's calls still count after the fast replica's clock passed the skew and the lease TTL, in both directions", async (t) => {
    const probe = await redisOrSkip(t);
    if (probe === null) return;
    probe.disconnect();
    const TTL = 600;
    await Promise.all(
      SKEWS.map(async (skew) => {
        const [a, b] = await skewedFleet(
          skew,
          { lanes: { chat: { limit: 3, reserve: 0, queueLimit: 5, queueTimeoutMs: 3_600_000 } } },
          TTL,
        );
        const held = await Promise.all([a.gov.acquire("chat"), a.gov.acquire("chat"), a.gov.acquire("chat")]);
        let got: Lease | undefined;
        void b.gov.acquire("chat").then((l) => {
          got = l;
        });
        // a's clock stands still (a stalled or slow clock); b's jumps a minute, far past the skew
        // and the TTL. Real time passes three TTLs, so a has heartbeated several times.
        b.clock.advance(60_000);
        await settle(3 * TTL);
        await b.store.heartbeat();
        await settle();
        assert.equal(got, undefined, `skew ${skew}: a's 3 calls still count on b`);
        const lane = b.gov.snapshot().lanes[0]!;
        assert.equal(lane.fleet_inflight, 3, `skew ${skew}: b sees a's 3 in flight`);
        held[0]!.release();
        await until(`skew ${skew}: b granted after a's release`, () => got !== undefined);
        for (const l of [...held.slice(1), got!]) l.release();
      }),
    );
  });

  test("a bulk waiter aged on a fast clock does not take the interactive reserve fleet-wide", async (t) => {
    const probe = await redisOrSkip(t);
    if (probe === null) return;
    probe.disconnect();
    const [a, b] = await skewedFleet(30_000, {
      lanes: { chat: { limit: 3, reserve: 1, queueLimit: 5, queueTimeoutMs: 3_600_000, agingMs: 1_000 } },
    });
    const held = [
      await a.gov.acquire("chat", { priority: "bulk" }),
      await a.gov.acquire("chat", { priority: "bulk" }),
    ];
    let bulk: Lease | undefined;
    void b.gov.acquire("chat", { priority: "bulk" }).then((l) => {
      bulk = l;
    });
    b.clock.advance(600_000); // ten minutes of aging on b's clock: effective class interactive
    await b.store.heartbeat();
    await settle();
    assert.equal(bulk, undefined, "the third slot is the reserve: not for a bulk call, however aged");
    const interactive = await a.gov.acquire("chat", { priority: "interactive" });
    assert.equal(inflight(a.gov, b.gov), 3, "an interactive call on the other replica takes it");
    for (const l of [...held, interactive]) l.release();
    await until("b's bulk waiter granted once room is back", () => bulk !== undefined);
    bulk!.release();
  });

  for (const skew of [60_000, -60_000])
    test(`a breaker opened on one replica keeps its cooldown on a replica whose clock is ${skew > 0 ? "a minute ahead" : "a minute behind"}`, async (t) => {
      const probe = await redisOrSkip(t);
      if (probe === null) return;
      probe.disconnect();
      const [a, b] = await skewedFleet(skew, {
        lanes: {
          chat: {
            limit: 8,
            pods: [{ id: "http://pod:1", maxInflight: 8 }],
            adaptive: false,
            breaker: { failThreshold: 1, baseCooldownMs: 5_000, maxCooldownMs: 5_000 },
          },
        },
      });
      const lease = await a.gov.acquire("chat");
      lease.failed({ status: 503 });
      await until("b sees the pod open", () => b.gov.isTripped("http://pod:1"));
      const left = b.gov.snapshot().pods[0]!.reopens_in_s;
      // 5 s ± 20 % jitter, from the moment it opened: neither long over (b ahead) nor ~65 s (b behind).
      assert.ok(left >= 4 && left <= 6, `b's cooldown left: ${left} s`);
      b.clock.advance(left * 1000 + 1); // + 1 ms: the snapshot rounds to whole ms
      assert.equal(
        b.gov.isTripped("http://pod:1"),
        false,
        "and it ends on b's clock when the cooldown has passed",
      );
    });
});
