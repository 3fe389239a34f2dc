/**
 * The fleet section: refused without a Redis store (its settings would do nothing). Every budget
 * is shared in fleet mode, per-key bounds included (src/store/redis/keys.ts), so nothing else is
 * refused here.
 */
import { DEFAULTS } from "../core/defaults.js";
import { leaseTtlProblem, prefixProblem } from "../core/fleet-options.js";
import type { Checker } from "./checks.js";
import type { RawConfig } from "./raw.js";
import type { FleetConfig } from "./types.js";

const F = DEFAULTS.fleet;

export function fleetConfig(c: Checker, raw: RawConfig): FleetConfig {
  const f = raw.fleet;
  const fleet: FleetConfig = {
    leaseTtlMs: f.lease_ttl_s,
    onStoreError: f.on_store_error,
    expectedReplicas: f.expected_replicas,
    prefix: f.prefix,
  };
  if (raw.store.kind === "memory") {
    const written = (Object.keys(f) as (keyof typeof f)[]).find((k) => f[k] !== defaultsOf[k]);
    if (written !== undefined)
      c.error(
        ["fleet", written],
        "no fleet settings with store: memory (they apply to a Redis store only)",
        f[written],
      );
    return fleet;
  }
  // The rules a library user's `RedisStoreOptions` meet too (core/fleet-options.ts), said at the YAML path.
  const ttlProblem = leaseTtlProblem(fleet.leaseTtlMs, "s");
  if (ttlProblem !== undefined) c.error(["fleet", "lease_ttl_s"], ttlProblem, fleet.leaseTtlMs / 1000);
  const prefixIssue = prefixProblem(fleet.prefix);
  if (prefixIssue !== undefined) c.error(["fleet", "prefix"], prefixIssue, fleet.prefix);
  // Token and request budgets (`tpm`, `rpm`) and accounts are shared: their buckets, in-flight
  // counts and quota pauses live in Redis (src/store/redis/rates.ts, redis/accounts.ts); a key's
  // bound too (src/store/redis/keys.ts).
  return fleet;
}

const defaultsOf = {
  lease_ttl_s: F.leaseTtlMs,
  on_store_error: F.onStoreError,
  expected_replicas: F.expectedReplicas,
  prefix: F.prefix,
} as const;
