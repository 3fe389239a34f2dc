/**
 * Keys' and tenants' token and request budgets (issue 24), built from the resolved options by the
 * registry: one {@link KeyBudget} per key or tenant with a `tpm` or `rpm`, made by the store as an
 * account without an in-flight cap (`account:`-like keys `keybudget:ID` / `tenantbudget:NAME`, so a
 * fleet store shares them through Redis as it shares accounts), and on each key's arrival budget
 * the {@link KeyMeter} that puts them on its calls' paths.
 *
 * On a reload the budgets are changed in place (levels and debt kept, as an account's), so calls
 * in flight settle into the budget they took from and waiters keep what they counted.
 */
import type { ArrivalBudget } from "../core/budget.js";
import { KeyBudget, KeyMeter } from "../core/key-meter.js";
import { keyBudgetSettings } from "../core/key-options.js";
import type { ResolvedOptions } from "../core/options.js";
import type { RateLimitInfo } from "../core/rate-limits.js";
import { refillMs } from "../core/refill.js";
import type { Store } from "../core/store.js";

/** The store key of a key's budget: not `key:ID`, which is its arrival bound's. */
export const keyBudgetKey = (id: string): string => `keybudget:${id}`;
/** The store key of a tenant's budget. */
export const tenantBudgetKey = (name: string): string => `tenantbudget:${name}`;

/**
 * Makes `budgets` hold exactly the key and tenant budgets `options` configure (by store key), and
 * sets each key's meter (null for a key with no budget of its own or of its tenant's).
 */
export function syncKeyBudgets(
  store: Store,
  options: ResolvedOptions,
  keys: ReadonlyMap<string, ArrivalBudget>,
  budgets: Map<string, KeyBudget>,
  nowMs: number,
): void {
  const wanted = new Map<string, KeyBudget>();
  const budget = (storeKey: string, scope: "key" | "tenant", owner: string, tpm?: number, rpm?: number) => {
    const settings = keyBudgetSettings(tpm, rpm);
    if (settings === undefined) return null;
    const account = store.account(storeKey, settings, nowMs, `${scope}:${owner}`);
    account.reconfigure(settings, nowMs);
    const kept = budgets.get(storeKey);
    const b = kept !== undefined && kept.budget === account ? kept : new KeyBudget(account, scope, owner);
    wanted.set(storeKey, b);
    return b;
  };
  const tenants = new Map<string, KeyBudget | null>();
  for (const [name, t] of Object.entries(options.tenants ?? {}))
    tenants.set(name, budget(tenantBudgetKey(name), "tenant", name, t.tpm, t.rpm));
  for (const [id, k] of Object.entries(options.keys)) {
    const own = budget(keyBudgetKey(id), "key", id, k.tpm, k.rpm);
    const shared = k.tenant === undefined ? null : (tenants.get(k.tenant) ?? null);
    const parts = [own, shared].filter((p): p is KeyBudget => p !== null);
    const arrival = keys.get(id);
    if (arrival === undefined) continue;
    const same =
      arrival.meter !== undefined &&
      arrival.meter.parts.length === parts.length &&
      arrival.meter.parts.every((p, i) => p === parts[i]);
    // The same parts keep their meter (and the keyed paths it made); other parts get a new one.
    if (!same) arrival.meter = parts.length === 0 ? undefined : new KeyMeter(parts);
  }
  budgets.clear();
  for (const [k, b] of wanted) budgets.set(k, b);
}

/**
 * A key's buckets and its tenant's (none for no key) as the `RateLimit` / `x-ratelimit-*` headers report them
 * (`core/rate-limits.ts` for the lane's and account's): no interactive reserve, so `remaining` is
 * the level less what the key's (tenant's) queued calls will take.
 */
export function keyRateLimits(key: ArrivalBudget | null, nowMs: number): RateLimitInfo[] {
  const out: RateLimitInfo[] = [];
  for (const part of key?.meter?.parts ?? []) {
    for (const b of part.buckets()) {
      const level = b.levelAt(nowMs);
      out.push({
        scope: part.scope,
        name: part.owner,
        unit: b.unit,
        perMinute: b.perMinute,
        remaining: Math.max(0, Math.floor(level - part.queuedIn(b))),
        resetMs: Math.ceil(refillMs(b.perMinute - level, b.perMinute)),
      });
    }
  }
  return out;
}

/** The tenant of each key that has one (the snapshot's grouping). */
export function tenantOf(options: ResolvedOptions): Map<string, string> {
  const out = new Map<string, string>();
  for (const [id, k] of Object.entries(options.keys)) if (k.tenant !== undefined) out.set(id, k.tenant);
  return out;
}
