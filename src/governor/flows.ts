/**
 * Who shares a class with whom (issue 24, fair-queue.ts): each configured key's flow, set on its
 * arrival budget so a waiter reads it from its key with no field of its own. A key that names a
 * tenant waits in its tenant's flow (one flow, the tenant's weight, for all of its keys); any
 * other key is a flow of its own with its weight. Calls with no key, or a key not configured,
 * share the one anonymous flow of weight 1.
 *
 * The flow objects are kept across reloads and their weights changed in place, so waiters queued
 * before a reload keep their place in their flow and the new weight counts from the next grant.
 */
import type { ArrivalBudget } from "../core/budget.js";
import type { Flow } from "../core/fair-queue.js";
import type { ResolvedOptions } from "../core/options.js";

/** The tenants' flows, by tenant name (kept by the registry across reloads). */
export type TenantFlows = Map<string, Flow>;

/** Sets each key's flow from `options`: its tenant's, else its own (weight 1 unless written). */
export function syncFlows(
  options: ResolvedOptions,
  keys: ReadonlyMap<string, ArrivalBudget>,
  tenants: TenantFlows,
): void {
  const configured = options.tenants ?? {};
  for (const name of [...tenants.keys()]) if (!Object.hasOwn(configured, name)) tenants.delete(name);
  for (const [name, t] of Object.entries(configured)) {
    const flow = tenants.get(name);
    if (flow === undefined) tenants.set(name, { name: `tenant:${name}`, weight: t.weight ?? 1 });
    else flow.weight = t.weight ?? 1;
  }
  for (const [id, k] of Object.entries(options.keys)) {
    const arrival = keys.get(id);
    if (arrival === undefined) continue;
    if (k.tenant !== undefined) arrival.flow = tenants.get(k.tenant) ?? null;
    else if (arrival.flow === null || arrival.flow.name !== `key:${id}`)
      arrival.flow = { name: `key:${id}`, weight: k.weight ?? 1 };
    else arrival.flow.weight = k.weight ?? 1;
  }
}
