/**
 * The fleet section and what fleet mode (`store: redis://…`) does not share yet (per-key bounds).
 * A key that would be silently per-process with several replicas is refused with an error saying
 * so, and the fleet section is refused without a Redis store (its settings would do nothing).
 */
import { DEFAULTS } from "../core/defaults.js";
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
  if (fleet.leaseTtlMs < 300)
    c.error(
      ["fleet", "lease_ttl_s"],
      "at least 0.3 s (the heartbeat runs every third of it)",
      fleet.leaseTtlMs / 1000,
    );
  const notShared = (path: (string | number)[], what: string, value: unknown) =>
    c.error(
      path,
      `no ${what} with store: redis:// (not shared across replicas yet: each process would hold its own)`,
      value,
    );
  raw.auth.keys.forEach((k, i) => {
    if (k.max_inflight !== undefined)
      notShared(["auth", "keys", i, "max_inflight"], "per-key bound", k.max_inflight);
  });
  // Token and request budgets (`tpm`, `rpm`) and accounts are shared: their buckets, in-flight
  // counts and quota pauses live in Redis (src/store/fleet-rates.ts, fleet-accounts.ts).
  return fleet;
}

const defaultsOf = {
  lease_ttl_s: F.leaseTtlMs,
  on_store_error: F.onStoreError,
  expected_replicas: F.expectedReplicas,
  prefix: F.prefix,
} as const;
