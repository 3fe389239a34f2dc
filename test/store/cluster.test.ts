/**
 * Fleet mode on a real Redis Cluster: three masters on loopback joined by
 * `redis-cli --cluster create`, opened through `store: redis+cluster://…`. The store contract
 * suite passes against it; two Governors on it never hold more than a lane's limit, a release on
 * one wakes the other through the cluster's pub/sub (not the heartbeat's poll), and every key of
 * a fleet sits in one slot (one hash tag), so each script stays one atomic round trip.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { Redis } from "ioredis";
import { pino } from "pino";
import { request } from "undici";
import { parseConfig } from "../../src/config/schema.js";
import type { Lease } from "../../src/core/lease.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { Governor } from "../../src/governor/governor.js";
import { startSim } from "../../src/sim/server.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { describeStore } from "./contract.js";
import { uniquePrefix } from "./redis-helpers.js";
import { missingBinaries, RedisCluster } from "./topology-helpers.js";

const missing = missingBinaries();
const cluster = missing === null ? await RedisCluster.start() : null;
const stores: RedisStore[] = [];
after(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await cluster?.stop();
});

/** A started store on the cluster; closed after the file's tests. */
async function clusterStore(prefix: string, replica?: string, leaseTtlMs?: number): Promise<RedisStore> {
  const store = new RedisStore({
    url: cluster!.url,
    prefix,
    ...(replica === undefined ? {} : { replica }),
    ...(leaseTtlMs === undefined ? {} : { leaseTtlMs }),
  });
  stores.push(store);
  await store.start();
  return store;
}

const until = async (what: string, ok: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

/** Each node's keys of the fleet `prefix`, and the slots they hash to. */
function keysPerNode(prefix: string) {
  return Promise.all(
    cluster!.ports.map(async (port) => {
      const node = new Redis(port, "127.0.0.1", { protocol: 2 });
      try {
        const keys = await node.keys(`{${prefix}}*`);
        const slots = await Promise.all(keys.map((k) => node.cluster("KEYSLOT", k)));
        return { port, keys, slots: new Set(slots) };
      } finally {
        node.disconnect();
      }
    }),
  );
}

if (cluster === null) {
  test("the fleet store on a Redis Cluster", (t) => t.skip(`${missing}: no Redis Cluster can be started`));
} else {
  describeStore("redis cluster", () => clusterStore(uniquePrefix()), { propertyRuns: 40 });

  describe("two Governors on a Redis Cluster", () => {
    test("never hold more than the lane's limit together, and a release on one wakes the other by pub/sub", async () => {
      const prefix = uniquePrefix();
      // A long TTL puts the heartbeat's poll (TTL ÷ 3 = 20 s) far past the waits below: a waiter
      // woken within them was woken by the release message.
      const [a, b] = [await clusterStore(prefix, "a", 60_000), await clusterStore(prefix, "b", 60_000)];
      const options = { lanes: { chat: { limit: 3, reserve: 0, queueLimit: 20, queueTimeoutMs: 30_000 } } };
      const govs = [new Governor({ ...options, store: a }), new Governor({ ...options, store: b })];
      const held: Lease[] = [];
      const calls = Array.from({ length: 10 }, (_, i) =>
        govs[i % 2]!.acquire("chat").then((l) => {
          held.push(l);
          return l;
        }),
      );
      await until("three grants", () => held.length === 3);
      await a.heartbeat();
      await b.heartbeat();
      assert.equal(held.length, 3, "3 across both replicas, not 3 each");
      const fleet = govs.map((g) => {
        const lane = g.snapshot().lanes[0]!;
        return lane.fleet_inflight ?? lane.inflight;
      });
      assert.deepEqual(fleet, [3, 3], "each replica's snapshot counts the fleet");
      let released = 0;
      while (held.length < 10) {
        held[released++]!.release();
        const before = held.length;
        await until(`grant ${before + 1} after a release`, () => held.length > before);
        // Leases handed out and not released (a replica's local count may also hold a take
        // still being confirmed, which the cluster may refuse).
        assert.ok(held.length - released <= 3, `at most 3 granted at once, saw ${held.length - released}`);
      }
      for (const l of held) l.release();
      await Promise.all(calls);
      await until("all released", () => govs.every((g) => g.snapshot().lanes[0]!.inflight === 0));
    });

    test("a gateway with store: redis+cluster://… answers through the cluster and says it is connected", async () => {
      const sim = await startSim({ serviceMs: 0, jitterSigma: 0 });
      const config = parseConfig({
        store: cluster.url,
        fleet: { prefix: uniquePrefix() },
        models: [{ name: "m", max_concurrent_requests: 2, pods: [{ url: sim.url, max_inflight: 2 }] }],
      });
      const gateway = new Gateway({ config, logger: pino({ level: "silent" }) });
      try {
        const url = await gateway.listen(0, "127.0.0.1");
        const res = await request(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
        });
        await res.body.text();
        assert.equal(res.statusCode, 200);
        assert.equal(gateway.governor.snapshot().store?.mode, "connected");
      } finally {
        await gateway.close();
        await sim.close();
      }
    });

    test("the node holding a fleet's slot killed and restarted empty: the outage policy, then the counts written back", async () => {
      const prefix = uniquePrefix();
      // A short TTL: the heartbeat (every 300 ms) sees the outage and the return.
      const store = await clusterStore(prefix, "o", 900);
      const gov = new Governor({ lanes: { chat: { limit: 2, reserve: 0, queueLimit: 4 } }, store });
      const lease = await gov.acquire("chat");
      const port = (await keysPerNode(prefix)).find((n) => n.keys.length > 0)!.port;
      await cluster.kill(port);
      await until("the outage seen", () => store.status().mode === "local", 10_000);
      await cluster.restart(port);
      await until("connected again", () => store.status().mode === "connected", 15_000);
      await store.heartbeat();
      const node = new Redis(port, "127.0.0.1", { protocol: 2 });
      try {
        assert.equal(
          await node.hget(`{${prefix}}:b:lane:chat`, "o"),
          "1",
          "the call it holds is counted again",
        );
      } finally {
        node.disconnect();
      }
      lease.release();
    });

    test("every key of a fleet is on one node, in one slot (the {prefix} hash tag)", async () => {
      const prefix = uniquePrefix();
      const store = await clusterStore(prefix, "k");
      const gov = new Governor({
        lanes: { chat: { limit: 2, pods: [{ id: "http://pod:1", maxInflight: 2 }] } },
        groups: { g: { limit: 4 } },
        store,
      });
      const lease = await gov.acquire("chat");
      const holding = (await keysPerNode(prefix)).filter((n) => n.keys.length > 0);
      assert.equal(holding.length, 1, "one node holds them all");
      assert.ok(holding[0]!.keys.length >= 3, `the replicas set and the path's budgets: ${holding[0]!.keys}`);
      assert.equal(holding[0]!.slots.size, 1, "one slot");
      lease.release();
    });
  });
}
