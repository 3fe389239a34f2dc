/**
 * `import { RedisStore } from "sluice/redis"` resolves (package `exports["./redis"]`) to the built
 * fleet store, with its typings next to it, and a Governor on it grants against a real Redis: two
 * Governors (two stores, one prefix) share a lane of limit 1 — the second waits while the first
 * holds the slot, and is granted once it is released. Counted where the budget lives: the
 * lane's hash in Redis. Run from inside the package, so the import is the package's
 * self-reference, as in the README and `sluice/client` tests (build first: `npm run build`).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const program = `
import { Governor, isFleetStore } from "sluice";
import { RedisStore, redactStoreUrl } from "sluice/redis";
import { Redis } from "ioredis";
const [url, prefix] = process.argv.slice(1);
const lanes = { chat: { limit: 1, reserve: 0, queueTimeoutMs: 60_000 } };
const stores = ["a", "b"].map((replica) => new RedisStore({ url, prefix, replica }));
await Promise.all(stores.map((s) => s.start()));
const [a, b] = stores.map((store) => new Governor({ store, lanes }));
const redis = new Redis(url);
const held = async () => Object.values(await redis.hgetall("{" + prefix + "}:b:lane:chat")).map(Number);
const first = await a.acquire("chat");
let second = null;
const waiting = b.acquire("chat").then((lease) => (second = lease));
const whileHeld = { redis: await held(), secondGranted: second !== null };
first.release();
await waiting;
const afterRelease = await held();
second.release();
await Promise.all(stores.map((s) => s.close()));
await redis.quit();
console.log(JSON.stringify({ whileHeld, afterRelease, store: b.snapshot().store.mode, fleet: isFleetStore(stores[0]), shown: redactStoreUrl("redis://:pw@h:1") }));
`;

test("sluice/redis is exported, built with typings, and a Governor on it shares a lane through Redis", async (t) => {
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as {
    exports: Record<string, { types: string; import: string }>;
  };
  assert.deepEqual(pkg.exports["./redis"], {
    types: "./dist/store/redis/index.d.ts",
    import: "./dist/store/redis/index.js",
  });
  for (const file of Object.values(pkg.exports["./redis"]!)) assert.ok(existsSync(file), `${file} is built`);
  assert.match(readFileSync(pkg.exports["./redis"]!.types, "utf8"), /RedisStoreOptions/);
  const redis = await redisOrSkip(t);
  if (redis === null) return;
  redis.disconnect();
  const prefix = uniquePrefix();
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", program, REDIS_URL, prefix], {
    encoding: "utf8",
  });
  assert.deepEqual(JSON.parse(out), {
    whileHeld: { redis: [1], secondGranted: false },
    afterRelease: [1],
    store: "connected",
    fleet: true,
    shown: "redis://:***@h:1",
  });
});
