/**
 * A waiter whose grant Redis refused while another replica released: the release message can
 * reach this replica before the refusal does (they travel on different connections). The pass
 * that message started ran while the waiter still held its local take, so it granted nothing;
 * once the refusal arrives and the waiter is back in line, the store must look again — or the
 * waiter sits with room free until the next heartbeat (the full-suite property test's "lost
 * wake-up"). A TCP proxy holds the refusal until the release was heard.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { Redis } from "ioredis";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { OutageFixture, skipWithoutRedisServer } from "./outage-helpers.js";

const fixture = new OutageFixture();
after(() => fixture.close());

/** Heartbeats every 100 s: within this test only a release message can wake a waiter. */
const LEASE_TTL_MS = 300_000;
/** A bound against a hang, far below the heartbeat that would wake the waiter without the message. */
const BOUND_MS = 30_000;

async function until(what: string, predicate: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + BOUND_MS;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** `p`, or a failure naming `what` after the bound (a hang). */
async function within<T>(what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), BOUND_MS);
  });
  try {
    return await Promise.race([p, bound]);
  } finally {
    clearTimeout(timer);
  }
}

const lanes = {
  chat: { limit: 2, reserve: 0, queueLimit: 8, queueTimeoutMs: 120_000, adaptive: false as const },
};

describe("fleet wake-up", { timeout: 4 * BOUND_MS }, () => {
  test("a refusal heard after a release message is looked at again at once", async (t) => {
    if (skipWithoutRedisServer(t)) return;
    const { server, proxy, store: x, prefix } = await fixture.startBehindProxy("local", LEASE_TTL_MS);
    const y = new RedisStore({ url: server.url, prefix, replica: "r2", leaseTtlMs: LEASE_TTL_MS });
    await y.start();
    const gx = new Governor({ store: x, lanes });
    const gy = new Governor({ store: y, lanes });
    const lane = () => gx.snapshot().lanes.find((l) => l.lane === "chat")!;
    const redis = new Redis(server.url, { protocol: 2 });
    try {
      // A fresh Redis knows no script: the release's first EVALSHA would come back NOSCRIPT and be
      // sent again after the grant behind it. Y releases once first, so the order below holds.
      (await gy.acquire("chat")).release();
      await y.heartbeat();
      const [l1, l2] = [await gy.acquire("chat"), await gy.acquire("chat")];
      // X's waiter: refused once (Y holds both slots), then queued with Y's two calls in its mirror.
      const waiter = gx.acquire("chat");
      await until(
        "X's waiter queued, with Y's two calls known",
        () => lane().queued === 1 && lane().fleet_inflight === 2,
      );
      await until(
        "X's waiter advertised (Y's releases are published to it)",
        async () => (await redis.zscore(`{${prefix}}:waiting`, x.replica)) !== null,
      );
      const kept = proxy.holdReplies();
      // Y gives a slot back and takes it again in the same write (release first): the release's
      // message wakes X's waiter, whose grant Redis then refuses. (Interactive: a class better
      // than X's waiter, so Y's fair share of the lane does not leave the slot to X instead.)
      l1.release();
      const y3 = gy.acquire("chat", { priority: "interactive" });
      await within("X's grant refused (its answer kept)", kept);
      const held = await within("Y's new call granted", y3);
      l2.release(); // heard by X before the refusal: its pass finds the waiter still asking
      await until("X heard the second release", () => lane().fleet_inflight === undefined);
      proxy.passReplies();
      // Y holds one slot of two: X's waiter is granted by the message, not by a heartbeat 100 s away.
      const w1 = await within("X's waiter granted", waiter);
      const counts = await redis.hgetall(`{${prefix}}:b:lane:chat`);
      assert.deepEqual(counts, { r1: "1", r2: "1" }, "one call each, the lane's two slots");
      w1.release();
      held.release();
    } finally {
      proxy.passReplies();
      redis.disconnect();
      gx.close();
      gy.close();
      await y.close();
    }
  });
});
