/**
 * An account's quota pause learned by a replica while Redis is away reaches the rest of the fleet
 * when Redis answers again: the pause is written to Redis (as much of it as is left) and the other
 * replicas adopt it, instead of each learning it from its own quota answer. Replica a reaches its
 * private redis-server through a TCP proxy the test cuts; replica b stays connected.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { Redis } from "ioredis";
import type { GovernorOptions } from "../../src/core/options.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { OutageFixture, skipWithoutRedisServer, untilConnected } from "./outage-helpers.js";

const fixture = new OutageFixture();
after(() => fixture.close());

const options: GovernorOptions = {
  accounts: { prod: { maxInflight: 4, maxQuotaPauseMs: 60_000 } },
  lanes: {
    A: {
      account: "prod",
      limit: 4,
      reserve: 0,
      queueLimit: 4,
      queueTimeoutMs: 60_000,
      pods: [{ id: "http://pa:1", maxInflight: 4 }],
      adaptive: false,
    },
  },
};

async function until(what: string, ok: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500 && !(await ok()); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(await ok(), `timed out waiting for ${what}`);
}

test("a quota pause learned during an outage is shared with the fleet once Redis answers", {
  timeout: 60_000,
}, async (t) => {
  if (skipWithoutRedisServer(t)) return;
  const { server, proxy, store: aStore, prefix } = await fixture.startBehindProxy("local", 15_000);
  const bStore = new RedisStore({ url: server.url, prefix, replica: "b", leaseTtlMs: 15_000 });
  await bStore.start();
  const a = new Governor({ ...options, store: aStore });
  const b = new Governor({ ...options, store: bStore });
  const redis = new Redis(server.url, { protocol: 2 });
  const pauseKey = `{${prefix}}:q:account:prod`;
  try {
    const held = await a.acquire("A");
    await proxy.cut();
    await aStore.heartbeat(); // the failed round trip: a is on its own
    assert.equal(aStore.status().mode, "local");

    held.failed({ status: 429, headers: { "retry-after-ms": "20000" } }); // the provider's quota answer
    assert.ok(a.snapshot().accounts[0]!.quota_paused_s > 0, "a pauses the account at once");
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(b.snapshot().accounts[0]!.quota_paused_s, 0, "b cannot know yet");
    assert.ok((await redis.pttl(pauseKey)) <= 0, "nor can Redis");

    await proxy.restore();
    await untilConnected(aStore);
    await until("the pause written to Redis", async () => (await redis.pttl(pauseKey)) > 0);
    const left = await redis.pttl(pauseKey);
    assert.ok(left > 15_000 && left <= 20_000, `what is left of the 20 s pause: ${left} ms`);
    await until("b adopts the pause", () => b.snapshot().accounts[0]!.quota_paused_s > 0);
  } finally {
    await proxy.restore();
    redis.disconnect();
    a.close();
    b.close();
    await bStore.close();
  }
});
