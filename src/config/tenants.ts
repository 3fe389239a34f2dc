/**
 * Client keys' budgets and the tenants that group them (issue 24): each `auth.keys[].tenant` must
 * name an entry of `tenants` (with a "did you mean"), and both are turned into their normalized
 * shape. Zero and negative numbers are refused by the schema (`raw.ts`), naming the key path.
 */
import type { Checker } from "./checks.js";
import type { RawConfig } from "./raw.js";
import { nearestKey } from "./suggest.js";
import type { ClientKeyConfig, TenantConfig } from "./types.js";

/**
 * Records an error for every key whose `tenant` names no tenant, and for a key of a tenant that
 * writes its own `weight`: its calls wait in its tenant's flow, whose weight is the tenant's, so
 * the key's own would be accepted and do nothing.
 */
export function checkTenants(c: Checker, raw: RawConfig): void {
  const names = Object.keys(raw.tenants);
  raw.auth.keys.forEach((k, i) => {
    if (k.tenant !== undefined && k.weight !== undefined)
      c.error(
        ["auth", "keys", i, "weight"],
        `no weight on a key of a tenant: its calls share tenant ${k.tenant}'s flow, so set tenants.${k.tenant}.weight instead`,
        k.weight,
      );
    if (k.tenant === undefined || Object.hasOwn(raw.tenants, k.tenant)) return;
    const near = nearestKey(k.tenant, names);
    c.error(
      ["auth", "keys", i, "tenant"],
      `the name of a tenant in tenants (${names.join(", ") || "none configured"})`,
      k.tenant,
      near === undefined ? undefined : `did you mean "${near}"?`,
    );
  });
}

/** The client keys, normalized. */
export function clientKeys(raw: RawConfig): ClientKeyConfig[] {
  return raw.auth.keys.map((k) => ({
    id: k.id,
    sha256: k.sha256,
    maxPriority: k.max_priority,
    ...(k.max_inflight === undefined ? {} : { maxInflight: k.max_inflight }),
    ...(k.tpm === undefined ? {} : { tpm: k.tpm }),
    ...(k.rpm === undefined ? {} : { rpm: k.rpm }),
    ...(k.weight === undefined ? {} : { weight: k.weight }),
    ...(k.tenant === undefined ? {} : { tenant: k.tenant }),
  }));
}

/** The tenants, normalized. */
export function tenantsOf(raw: RawConfig): Record<string, TenantConfig> {
  const out: Record<string, TenantConfig> = {};
  for (const [name, t] of Object.entries(raw.tenants))
    out[name] = {
      ...(t.tpm === undefined ? {} : { tpm: t.tpm }),
      ...(t.rpm === undefined ? {} : { rpm: t.rpm }),
      ...(t.weight === undefined ? {} : { weight: t.weight }),
    };
  return out;
}
