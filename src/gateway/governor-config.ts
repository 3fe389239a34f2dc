/**
 * The gateway's config as Governor options: each model is a lane; the gateway's
 * `admission.max_concurrency` and each account's `max_inflight` are groups every lane on their
 * path joins; bounded GPU groups are groups its pods join (DESIGN §1 table).
 */
import type { GatewayConfig } from "../config/schema.js";
import type { Clock } from "../core/clock.js";
import type { GovernorOptions, LaneOptions } from "../core/options.js";

/** The group that bounds in flight across the whole gateway. */
export const GATEWAY_GROUP = "gateway";

export function governorOptions(config: GatewayConfig, clock?: Clock): GovernorOptions {
  const groups: Record<string, { limit: number }> = {
    [GATEWAY_GROUP]: { limit: config.admission.maxConcurrency },
  };
  for (const [name, g] of Object.entries(config.gpuGroups)) groups[`gpu:${name}`] = { limit: g.maxInflight };
  const accountsOf = new Map<string, string[]>();
  for (const [name, a] of Object.entries(config.accounts)) {
    if (a.maxInflight === undefined) continue;
    groups[`account:${name}`] = { limit: a.maxInflight };
    for (const m of a.models) accountsOf.set(m, [...(accountsOf.get(m) ?? []), `account:${name}`]);
  }
  const lanes: Record<string, LaneOptions> = {};
  for (const m of config.models) {
    const podSum = m.pods.reduce((s, p) => s + p.maxInflight, 0);
    lanes[m.name] = {
      // 0 means "no lane bound" in the config; the pods' ceilings still bound it.
      limit: m.maxConcurrentRequests === 0 ? podSum : m.maxConcurrentRequests,
      reserve: m.reserve,
      queueLimit: m.queueLimit,
      queueTimeoutMs: m.queueTimeoutMs,
      agingMs: config.admission.agingMs,
      group: [
        GATEWAY_GROUP,
        ...(m.gpuGroup !== undefined && Object.hasOwn(config.gpuGroups, m.gpuGroup)
          ? [`gpu:${m.gpuGroup}`]
          : []),
        ...(accountsOf.get(m.name) ?? []),
      ],
      pods: m.pods.map((p) => ({
        id: p.url,
        maxInflight: p.maxInflight,
        // The model's own group is already on the lane's path; a pod joins only another bounded one.
        ...(Object.hasOwn(config.gpuGroups, p.gpuGroup) && p.gpuGroup !== m.gpuGroup
          ? { gpuGroup: `gpu:${p.gpuGroup}` }
          : {}),
      })),
      adaptive: m.adaptive === false ? false : { floor: m.adaptive.floor },
      breaker: m.breaker,
      ...(m.fallback !== undefined ? { fallback: m.fallback } : {}),
    };
  }
  const keys: NonNullable<GovernorOptions["keys"]> = {};
  for (const k of config.auth.keys) {
    keys[k.id] = { maxInflight: k.maxInflight ?? Number.MAX_SAFE_INTEGER, maxPriority: k.maxPriority };
  }
  return { lanes, groups, keys, ...(clock ? { clock } : {}) };
}
