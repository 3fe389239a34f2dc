/**
 * The store URL: one server, a Redis Cluster or a Sentinel group, read in one place
 * (src/store/redis/connection.ts) for both the config and the store, and never echoing a password.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Cluster, Redis } from "ioredis";
import { parseConfig } from "../../src/config/schema.js";
import { config, invalid } from "../../src/config/test-helpers.js";
import {
  connectRedis,
  parseStoreUrl,
  redactStoreUrl,
  StoreUrlError,
} from "../../src/store/redis/connection.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";

describe("store URLs the config accepts", () => {
  const accepted = [
    "redis://127.0.0.1:6379/0",
    "rediss://:s3cret@cache.internal:6380",
    "redis+cluster://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000",
    "redis+cluster://:s3cret@r1:7000,[::1]:7001",
    "redis+cluster://r1",
    "redis+sentinel://s1:26379,s2:26379/mymaster",
    "redis+sentinel://app:s3cret@s1,s2:26380/cache-1.main/2",
  ];
  for (const url of accepted)
    test(`${url} selects the fleet store, the URL kept as written`, () => {
      assert.deepEqual(parseConfig(config({ store: url })).store, { kind: "redis", url });
    });
});

describe("what a store URL names", () => {
  test("a Cluster: every seed node, 6379 where no port is given, IPv6 in brackets, the password decoded", () => {
    assert.deepEqual(parseStoreUrl("redis+cluster://:p%40ss@r1:7000,[::1]:7001,r3"), {
      kind: "cluster",
      nodes: [
        { host: "r1", port: 7000 },
        { host: "::1", port: 7001 },
        { host: "r3", port: 6379 },
      ],
      password: "p@ss",
    });
  });

  test("a Sentinel group: the sentinels (26379 by default), the master's name, the db, user and password", () => {
    assert.deepEqual(parseStoreUrl("redis+sentinel://app:pw@s1,s2:26380/mymaster/3"), {
      kind: "sentinel",
      sentinels: [
        { host: "s1", port: 26379 },
        { host: "s2", port: 26380 },
      ],
      master: "mymaster",
      db: 3,
      username: "app",
      password: "pw",
    });
    assert.equal((parseStoreUrl("redis+sentinel://s1/m") as { db: number }).db, 0);
  });

  test("one server is left to ioredis as written", () => {
    assert.deepEqual(parseStoreUrl("redis://:pw@h:1/2"), { kind: "single", url: "redis://:pw@h:1/2" });
  });

  test("connectRedis opens a Cluster client for a Cluster URL, with the node options and the password on each node", () => {
    const c = connectRedis("redis+cluster://:pw@127.0.0.1:7000,127.0.0.1:7001", {
      lazyConnect: true,
      enableOfflineQueue: false,
      protocol: 2,
      maxRetriesPerRequest: 1,
    });
    assert.ok(c instanceof Cluster);
    assert.equal(c.options.enableOfflineQueue, false);
    assert.equal(c.options.redisOptions?.password, "pw");
    assert.equal(c.options.redisOptions?.protocol, 2);
    assert.equal(c.status, "wait", "lazy: nothing connects until start()");
    c.disconnect();
  });

  test("connectRedis opens a Sentinel-backed client for a Sentinel URL", () => {
    const r = connectRedis("redis+sentinel://:pw@127.0.0.1:26379/mymaster/1", { lazyConnect: true });
    assert.ok(r instanceof Redis);
    assert.deepEqual(r.options.sentinels, [{ host: "127.0.0.1", port: 26379 }]);
    assert.equal(r.options.name, "mymaster");
    assert.equal(r.options.db, 1);
    assert.equal(r.options.password, "pw");
    r.disconnect();
  });
});

describe("store URLs refused, at the key `store`, without the password", () => {
  const refused: [string, RegExp][] = [
    ["redis+cluster://:s3cret@r1:7000,r2:7000/3", /Cluster has db 0 only/],
    ["redis+sentinel://:s3cret@s1:26379", /master's name/],
    ["redis+sentinel://:s3cret@s1:26379/", /master's name/],
    ["redis+cluster://:s3cret@r1:99999", /host:port/],
    ["redis+cluster://:s3cret@r1:7000,,r2", /host:port/],
    ["redis+cluster://:s3cret@r1:7000?tls=true", /no spaces, query or fragment/],
    ["redis://:s3cret@bad host:6379", /^memory, or a Redis URL/],
    ["etcd://:s3cret@x", /^memory, or a Redis URL/],
  ];
  for (const [url, expected] of refused)
    test(url.replace("s3cret", "***"), () => {
      const e = invalid(config({ store: url }));
      assert.equal(e.path, "store");
      assert.match(e.expected, expected);
      assert.ok(!e.message.includes("s3cret"), e.message);
      assert.ok(!JSON.stringify(e.received).includes("s3cret"), String(e.received));
    });

  test("TLS to a Cluster or a Sentinel group is refused as not built yet, naming the form", () => {
    for (const url of ["rediss+cluster://:s3cret@r1:7000", "rediss+sentinel://:s3cret@s1/m"]) {
      const e = invalid(config({ store: url }));
      assert.equal(e.path, "store");
      assert.match(
        e.message,
        /TLS to a Redis (Cluster|Sentinel group) \(rediss\+\w+:\/\/\) is not built yet/,
      );
      assert.ok(!e.message.includes("s3cret"), e.message);
    }
  });

  test("the store itself refuses the same URLs (a library user passing a RedisStore url)", () => {
    assert.throws(
      () => connectRedis("redis+cluster://:s3cret@r1/5", { lazyConnect: true }),
      (e: unknown) => e instanceof StoreUrlError && e.path === "store" && !e.message.includes("s3cret"),
    );
  });
});

describe("redactStoreUrl", () => {
  const cases: [string, string][] = [
    ["redis://:s3cret@h:6379/0", "redis://:***@h:6379/0"],
    ["redis://app:s3cret@h", "redis://app:***@h"],
    ["redis://s3cret@h", "redis://***@h"],
    ["redis+cluster://:s3@cr/et@r1:1,r2:2", "redis+cluster://:***@r1:1,r2:2"],
    ["redis+sentinel://s1,s2/m", "redis+sentinel://s1,s2/m"],
    ["not a url @ all", "not a url @ all"],
  ];
  for (const [url, shown] of cases)
    test(`${shown} (a raw @ or / in a password included)`, () => {
      assert.equal(redactStoreUrl(url), shown);
    });
});

describe("the fleet store's description (snapshots, /readyz, sluice status)", () => {
  for (const [url, shown] of [
    ["redis+cluster://:s3cret@r1:7000,r2:7001", "redis+cluster://:***@r1:7000,r2:7001"],
    ["redis+sentinel://:s3cret@s1:26379/mymaster", "redis+sentinel://:***@s1:26379/mymaster"],
    ["redis://:s3cret@r1:6379/0", "redis://:***@r1:6379/0"],
  ] as const)
    test(`is ${shown}`, async () => {
      const store = new RedisStore({ url }); // not started: nothing connects
      assert.equal(store.description, shown);
      await store.close();
    });
});
