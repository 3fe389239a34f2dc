/**
 * The fleet's settings are checked once, by the same rules, for a library user
 * (`new RedisStore(options)`) and for a config (`fleet:`): the lease TTL's minimum and the key
 * prefix's characters come from core/fleet-options.ts, said in the unit the user wrote, and the
 * defaults are `DEFAULTS.fleet`'s (the heartbeat every third of the lease).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { config, invalid } from "../../src/config/test-helpers.js";
import { DEFAULTS } from "../../src/core/defaults.js";
import { ConfigError } from "../../src/core/errors.js";
import { resolveFleetOptions } from "../../src/core/fleet-options.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { REDIS_URL } from "./redis-helpers.js";

describe("fleet settings, for the library and the config alike", () => {
  test("a lease TTL under 0.3 s is refused by both, with the same reason", () => {
    assert.throws(
      () => new RedisStore({ url: REDIS_URL, leaseTtlMs: 200 }),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.path === "store.leaseTtlMs" &&
        e.expected === "at least 300 ms (the heartbeat runs every third of it)",
    );
    const e = invalid(config({ store: "redis://r:6379", fleet: { lease_ttl_s: 0.2 } }));
    assert.equal(e.path, "fleet.lease_ttl_s");
    assert.equal(e.expected, "at least 0.3 s (the heartbeat runs every third of it)");
  });

  test("a key prefix that cannot be a hash tag is refused by both", () => {
    assert.throws(
      () => new RedisStore({ url: REDIS_URL, prefix: "a/b" }),
      (e: unknown) => e instanceof ConfigError && e.path === "store.prefix",
    );
    const e = invalid(config({ store: "redis://r:6379", fleet: { prefix: "a/b" } }));
    assert.deepEqual([e.path, e.expected], ["fleet.prefix", "letters, digits, . : _ -"]);
  });

  test("the defaults are DEFAULTS.fleet's, and the heartbeat is a third of the lease", () => {
    const F = DEFAULTS.fleet;
    assert.deepEqual(resolveFleetOptions({}), {
      leaseTtlMs: F.leaseTtlMs,
      heartbeatMs: F.leaseTtlMs / 3,
      onStoreError: F.onStoreError,
      expectedReplicas: F.expectedReplicas,
      prefix: F.prefix,
    });
    assert.equal(resolveFleetOptions({ leaseTtlMs: 300 }).heartbeatMs, 100);
    assert.throws(() => resolveFleetOptions({ expectedReplicas: 0 }), ConfigError);
  });
});
