/**
 * The options of keys and tenants (issue 24), validated once like every other option
 * (`options.ts`): a key's in-flight bound and class cap, its own token and request budgets
 * (`tpm`, `rpm`), its weight in fair queuing within a class, and the tenant whose budgets it
 * shares with the tenant's other keys.
 *
 * A key's (or tenant's) `tpm` / `rpm` are token buckets like a model's: reserved at the grant,
 * reconciled with real usage at the end (`rate-budget.ts`). They are kept as an account without an
 * in-flight cap (`AccountBudget`, {@link keyBudgetSettings}), so a fleet store shares them as it
 * shares an account's. Unlike an account's they are never paused by a provider's 429: a quota is
 * the provider's word about the account, not about who called.
 */
import type { AccountSettings } from "./account.js";
import { DEFAULTS } from "./defaults.js";
import { PRIORITIES, type Priority, rankOf } from "./priority.js";
import { checkRate } from "./rate-options.js";
import { check, isInt, isNum, knownKeys } from "./validate.js";

/** One key (tenant of the gateway, or a caller of the library) of `GovernorOptions.keys`. */
export interface KeyOptions {
  /** Calls in flight plus queued for this key. */
  maxInflight: number;
  /** The highest class the key may claim. **Default:** interactive. */
  maxPriority?: Priority;
  /** Tokens per minute for this key's calls (a bucket of its own). **Default:** none. */
  tpm?: number;
  /** Requests per minute for this key's calls. **Default:** none. */
  rpm?: number;
  /** Its share in fair queuing within a class, relative to other keys. **Default:** 1. */
  weight?: number;
  /** The tenant (a key of `GovernorOptions.tenants`) whose budgets this key's calls also count against. */
  tenant?: string;
}

/** A group of keys sharing one budget (`GovernorOptions.tenants`). */
export interface TenantOptions {
  /** The tenant's share in fair queuing within a class. **Default:** 1. */
  weight?: number;
  /** Tokens per minute across the tenant's keys (one bucket). **Default:** none. */
  tpm?: number;
  /** Requests per minute across the tenant's keys. **Default:** none. */
  rpm?: number;
  /** Not built: refused (a tenant's in-flight bound shared by its keys). */
  maxInflight?: number;
}

/** A key with every default applied. */
export interface ResolvedKey {
  maxInflight: number;
  maxPriority: Priority;
  tpm?: number | undefined;
  rpm?: number | undefined;
  /** Present when written (fair queuing reads 1 when absent). */
  weight?: number | undefined;
  tenant?: string | undefined;
}

/** A tenant with every default applied. */
export interface ResolvedTenant {
  weight?: number | undefined;
  tpm?: number | undefined;
  rpm?: number | undefined;
}

const KEY_KEYS = ["maxInflight", "maxPriority", "tpm", "rpm", "weight", "tenant"] as const;
const TENANT_KEYS = ["weight", "tpm", "rpm", "maxInflight"] as const;

/** A weight: a number > 0, or undefined. */
function checkWeight(v: unknown, path: string): number | undefined {
  if (v === undefined) return undefined;
  check(isNum(v, 0) && (v as number) > 0, path, "a number > 0", v);
  return v as number;
}

/** Validates `tenants` and returns them resolved (ConfigError naming the first bad value). */
export function resolveTenants(
  tenants: Readonly<Record<string, TenantOptions>> | undefined,
): Record<string, ResolvedTenant> {
  const out: Record<string, ResolvedTenant> = {};
  for (const [name, t] of Object.entries(tenants ?? {})) {
    const path = `tenants.${name}`;
    check(typeof t === "object" && t !== null, path, "an object", t);
    knownKeys(t, TENANT_KEYS, path);
    check(
      t.maxInflight === undefined,
      `${path}.maxInflight`,
      "nothing: a tenant's in-flight bound is not built yet (set maxInflight on each of its keys)",
      t.maxInflight,
    );
    out[name] = {
      ...only("weight", checkWeight(t.weight, `${path}.weight`)),
      ...only("tpm", checkRate(t.tpm, `${path}.tpm`)),
      ...only("rpm", checkRate(t.rpm, `${path}.rpm`)),
    };
  }
  return out;
}

/** Validates `keys` against the resolved `tenants` and applies the defaults. */
export function resolveKeys(
  keys: Readonly<Record<string, KeyOptions>> | undefined,
  tenants: Readonly<Record<string, ResolvedTenant>>,
): Record<string, ResolvedKey> {
  const out: Record<string, ResolvedKey> = {};
  for (const [name, k] of Object.entries(keys ?? {})) {
    const path = `keys.${name}`;
    check(typeof k === "object" && k !== null, path, "an object", k);
    knownKeys(k, KEY_KEYS, path);
    check(isInt(k.maxInflight, 1), `${path}.maxInflight`, "an integer ≥ 1", k.maxInflight);
    if (k.maxPriority !== undefined)
      check(
        rankOf(k.maxPriority) !== undefined,
        `${path}.maxPriority`,
        `one of ${PRIORITIES.join(", ")}`,
        k.maxPriority,
      );
    if (k.tenant !== undefined) {
      const known = Object.keys(tenants);
      check(
        typeof k.tenant === "string" && Object.hasOwn(tenants, k.tenant),
        `${path}.tenant`,
        `one of the tenants (${known.join(", ") || "none configured"})`,
        k.tenant,
      );
      // Its calls wait in the tenant's flow, whose weight is the tenant's: its own would do nothing.
      check(
        k.weight === undefined,
        `${path}.weight`,
        `nothing on a key of a tenant: its calls share tenant ${k.tenant}'s flow, so set tenants.${k.tenant}.weight instead`,
        k.weight,
      );
    }
    out[name] = {
      maxInflight: k.maxInflight,
      maxPriority: k.maxPriority ?? DEFAULTS.key.maxPriority,
      ...only("tpm", checkRate(k.tpm, `${path}.tpm`)),
      ...only("rpm", checkRate(k.rpm, `${path}.rpm`)),
      ...only("weight", checkWeight(k.weight, `${path}.weight`)),
      ...only("tenant", k.tenant),
    };
  }
  return out;
}

/**
 * The account settings of a key's or tenant's budget: its buckets, no in-flight cap, nothing
 * adaptive, no interactive reserve (the key's whole budget is its own) and no quota pause
 * (a provider's 429 pauses the account it meters, never a caller). Undefined without a bucket.
 */
export function keyBudgetSettings(
  tpm: number | undefined,
  rpm: number | undefined,
): AccountSettings | undefined {
  if (tpm === undefined && rpm === undefined) return undefined;
  return {
    maxInflight: undefined,
    tpm,
    rpm,
    tpmReserve: 0,
    rpmReserve: 0,
    adaptive: false,
    maxQuotaPauseMs: 0,
  };
}

/** `{ [name]: value }` when the value is given, else nothing (resolved options hold only what was set). */
function only<K extends string, V>(name: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: V };
}
