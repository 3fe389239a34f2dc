/**
 * The fleet store's settings (`RedisStoreOptions`, the config's `fleet:` section), each default
 * and each rule written once, for a library user and a config alike: `resolveFleetOptions`
 * applies the defaults (`DEFAULTS.fleet`) and throws `ConfigError` (STYLE G7); the config
 * (src/config/fleet.ts) asks the same `…Problem` functions and reports at its YAML path.
 */
import { DEFAULTS } from "./defaults.js";
import { ConfigError } from "./errors.js";

/** What to do while Redis cannot be reached. */
export type OnStoreError = "local" | "open" | "closed";

/** The outage policies, in the order the docs list them. */
export const ON_STORE_ERROR: readonly OnStoreError[] = ["local", "open", "closed"];

/** The settings a fleet shares; every one optional (`DEFAULTS.fleet`). */
export interface FleetOptions {
  /** How long a replica's calls count after its last heartbeat. **Default:** 15 000 ms; at least 300. */
  leaseTtlMs?: number;
  /** **Default:** `local`. */
  onStoreError?: OnStoreError;
  /** Replicas the fleet runs, for `local`'s static division. **Default:** 2. */
  expectedReplicas?: number;
  /** Prefix of every key (one Cluster hash tag for all of them). **Default:** `sluice`. */
  prefix?: string;
}

/** Fleet settings with every default applied and checked. */
export interface ResolvedFleetOptions {
  readonly leaseTtlMs: number;
  /** The heartbeat's interval (`heartbeatMs`). */
  readonly heartbeatMs: number;
  readonly onStoreError: OnStoreError;
  readonly expectedReplicas: number;
  readonly prefix: string;
}

const F = DEFAULTS.fleet;

/** How often a replica renews a lease of `leaseTtlMs`: a third of it (`DEFAULTS.fleet.heartbeatsPerLease`). */
export function heartbeatMs(leaseTtlMs: number): number {
  return Math.floor(leaseTtlMs / F.heartbeatsPerLease);
}

/** What a lease TTL must be, in `unit`, or undefined when `ms` is one. */
export function leaseTtlProblem(ms: number, unit: "ms" | "s"): string | undefined {
  if (Number.isFinite(ms) && ms >= F.minLeaseTtlMs) return undefined;
  const min = unit === "s" ? `${F.minLeaseTtlMs / 1000} s` : `${F.minLeaseTtlMs} ms`;
  return `at least ${min} (the heartbeat runs every third of it)`;
}

/** What a key prefix must be (it becomes the Cluster hash tag `{prefix}`), or undefined when it is one. */
export function prefixProblem(prefix: string): string | undefined {
  return /^[\w.:-]+$/.test(prefix) ? undefined : "letters, digits, . : _ -";
}

/**
 * `options` with every default applied. Throws `ConfigError` at `path`.`leaseTtlMs` (or the
 * setting at fault) for a value the fleet cannot run with.
 */
export function resolveFleetOptions(options: FleetOptions, path = "store"): ResolvedFleetOptions {
  const leaseTtlMs = options.leaseTtlMs ?? F.leaseTtlMs;
  const ttlProblem = leaseTtlProblem(leaseTtlMs, "ms");
  if (ttlProblem !== undefined) throw new ConfigError(`${path}.leaseTtlMs`, ttlProblem, leaseTtlMs);
  const prefix = options.prefix ?? F.prefix;
  const badPrefix = prefixProblem(prefix);
  if (badPrefix !== undefined) throw new ConfigError(`${path}.prefix`, badPrefix, prefix);
  const onStoreError: OnStoreError = options.onStoreError ?? F.onStoreError;
  if (!ON_STORE_ERROR.includes(onStoreError))
    throw new ConfigError(`${path}.onStoreError`, `one of ${ON_STORE_ERROR.join(", ")}`, onStoreError);
  const expectedReplicas = options.expectedReplicas ?? F.expectedReplicas;
  if (!Number.isInteger(expectedReplicas) || expectedReplicas < 1)
    throw new ConfigError(`${path}.expectedReplicas`, "an integer of at least 1", expectedReplicas);
  return { leaseTtlMs, heartbeatMs: heartbeatMs(leaseTtlMs), onStoreError, expectedReplicas, prefix };
}
