/**
 * A token settlement whose answer is lost may have run in Redis: ioredis re-sends what was in flight
 * when it reconnects, and the store re-sends a settlement that failed once Redis answers again.
 * Either way the refund must reach the fleet's bucket once (`settle.lua` applies each id once):
 * twice would hand the fleet tokens the provider never gave back. A TCP proxy forwards the
 * settlement and loses its answer, then drops the connection.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { Redis } from "ioredis";
import { Governor } from "../../src/governor/governor.js";
import { LUA } from "../../src/store/redis/lua/scripts.generated.js";
import { OutageFixture, skipWithoutRedisServer, untilConnected } from "./outage-helpers.js";

const TPM = 6000;
const fixture = new OutageFixture();
after(() => fixture.close());

/** The bucket's level in Redis now (the stored level plus the refill since it was stored). */
async function levelInRedis(redis: Redis, key: string): Promise<number> {
  const [level, at] = await redis.hmget(key, "level", "t");
  const [s, us] = await redis.time();
  const now = Number(s) * 1000 + Math.floor(Number(us) / 1000);
  return Math.min(TPM, Number(level) + ((now - Number(at)) * TPM) / 60_000);
}

test("a refund whose answer was lost reaches the fleet's bucket once, not again when re-sent", {
  timeout: 60_000,
}, async (t) => {
  if (skipWithoutRedisServer(t)) return;
  const { server, proxy, store, prefix } = await fixture.startBehindProxy("local", 15_000);
  const gov = new Governor({
    store,
    lanes: { chat: { limit: 8, reserve: 0, queueLimit: 8, queueTimeoutMs: 60_000, tpm: TPM } },
  });
  const redis = new Redis(server.url, { protocol: 2 });
  const bucket = `{${prefix}}:r:tpm:lane:chat`;
  try {
    const [refunded, kept] = [
      await gov.acquire("chat", { tokens: 2500 }),
      await gov.acquire("chat", { tokens: 2500 }),
    ];
    const before = await levelInRedis(redis, bucket);
    assert.ok(before < 1100, `5,000 of 6,000 taken: ${before}`);

    // Redis knows the script already (else its NOSCRIPT answer would be lost, not the settlement's).
    await redis.script("LOAD", LUA.settle);
    proxy.dropReplies(); // Redis runs what it is sent; its answers are lost
    refunded.release({ sent: false }); // the call never reached the provider: 2,500 back
    for (let i = 0; i < 500 && (await levelInRedis(redis, bucket)) < before + 2400; i++)
      await new Promise((r) => setTimeout(r, 10));
    const applied = await levelInRedis(redis, bucket);
    assert.ok(applied >= before + 2400, `the refund ran in Redis: ${before} → ${applied}`);

    await proxy.cut(); // the connection drops with the settlement unanswered
    await proxy.restore();
    await untilConnected(store); // ioredis re-sent it, or the store did after the failure
    await store.heartbeat();
    const after = await levelInRedis(redis, bucket);
    const refill = 300; // a few seconds of refill at 100 tokens/s, at most
    assert.ok(after < applied + refill, `refunded once (${applied} → ${after}), not 2,500 more`);
    kept.release();
  } finally {
    await proxy.restore();
    redis.disconnect();
    gov.close();
  }
});
