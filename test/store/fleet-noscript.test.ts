/**
 * A release that Redis answers NOSCRIPT (the script cache was flushed, or Redis restarted) is sent
 * again as EVAL — after the grant that was written behind it, when that grant's script was known.
 * The grant is refused for the slot its own replica just gave back, and nothing else would wake
 * its waiter before the next heartbeat: the store looks again once the re-sent release is answered.
 * Heartbeats 100 s apart, so only that can grant the waiter within the bound.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { Redis } from "ioredis";
import { Governor } from "../../src/governor/governor.js";
import { LUA } from "../../src/store/redis/lua/scripts.generated.js";
import { OutageFixture, skipWithoutRedisServer } from "./outage-helpers.js";

const fixture = new OutageFixture();
after(() => fixture.close());

const LEASE_TTL_MS = 300_000;
/** A bound against a hang, far below the heartbeat (100 s) that would wake the waiter without the fix. */
const BOUND_MS = 10_000;

test("a release re-sent after NOSCRIPT, behind a grant it made room for, wakes the waiter", async (t) => {
  if (skipWithoutRedisServer(t)) return;
  const { server, store, prefix } = await fixture.startBehindProxy("local", LEASE_TTL_MS);
  const gov = new Governor({
    store,
    lanes: { chat: { limit: 1, reserve: 0, queueLimit: 4, queueTimeoutMs: 120_000, adaptive: false } },
  });
  const redis = new Redis(server.url, { protocol: 2 });
  try {
    const held = await gov.acquire("chat");
    const waiter = gov.acquire("chat");
    let granted = false;
    void waiter.then(() => {
      granted = true;
    });
    // Redis forgets every script, then learns all but the release: the release below comes back
    // NOSCRIPT while the grant written after it runs at once.
    await redis.script("FLUSH");
    for (const [name, source] of Object.entries(LUA))
      if (name !== "release") await redis.script("LOAD", source);
    held.release();
    const lease = await Promise.race([
      waiter,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error("the waiter was not granted: nobody looked again")), BOUND_MS),
      ),
    ]);
    assert.equal(granted, true);
    assert.deepEqual(
      await redis.hgetall(`{${prefix}}:b:lane:chat`),
      { r1: "1" },
      "the waiter's call, counted once",
    );
    lease.release();
  } finally {
    redis.disconnect();
    gov.close();
  }
});
