/**
 * The gateway's config as the Governor's resolved options, in one mapping and with no second
 * validation: `parseConfig` has already checked every value the library validator would (a test,
 * test/config/governor-options.test.ts, runs the library validator on this output to keep it so).
 * Each model is a lane; `admission.max_concurrency` / `max_queued` are the Governor's admission
 * bound (on every lane's path); each account is the Governor's account (in-flight cap, adaptive,
 * `tpm`, `rpm`, quota pause) that every lane of the account joins; a model's `tpm` / `rpm` are its
 * lane's own buckets; bounded GPU groups are groups a lane or its pods join. A key's `tpm` / `rpm`
 * and its tenant's are budgets on its calls' paths (core/key-meter.ts); `weight` is its share in
 * fair queuing within a class.
 */

import type { Clock } from "../core/clock.js";
import {
  markResolved,
  passThroughLane,
  type ResolvedAccount,
  type ResolvedKey,
  type ResolvedLane,
  type ResolvedOptions,
  type ResolvedTenant,
} from "../core/options.js";
import type { Store } from "../core/store.js";
import { laneLimit } from "./reach.js";
import type { GatewayConfig, ModelConfig } from "./types.js";

/** The Governor's group for a bounded GPU group of the config. */
const gpu = (name: string) => `gpu:${name}`;

export function governorOptions(config: GatewayConfig, clock?: Clock, store?: Store): ResolvedOptions {
  const groups: Record<string, { limit: number }> = {};
  for (const [name, g] of Object.entries(config.gpuGroups)) groups[gpu(name)] = { limit: g.maxInflight };
  const accountOf = new Map<string, string>();
  const accounts: Record<string, ResolvedAccount> = {};
  for (const [name, a] of Object.entries(config.accounts)) {
    accounts[name] = {
      maxInflight: a.maxInflight,
      tpm: a.tpm,
      rpm: a.rpm,
      tpmReserve: a.tpmReserve,
      rpmReserve: a.rpmReserve,
      // Only when written, as the library validator resolves them (no keys set to undefined).
      ...(a.tpmShares === undefined ? {} : { tpmShares: a.tpmShares }),
      ...(a.rpmShares === undefined ? {} : { rpmShares: a.rpmShares }),
      ...(a.shareAbove === undefined ? {} : { shareAbove: a.shareAbove }),
      adaptive: a.adaptive,
      maxQuotaPauseMs: a.maxQuotaPauseMs,
    };
    for (const m of a.models) accountOf.set(m, name); // at most one account per model (checked)
  }
  const lanes: Record<string, ResolvedLane> = {};
  for (const m of config.models) lanes[m.name] = lane(config, m, accountOf.get(m.name));
  const keys: Record<string, ResolvedKey> = {};
  for (const k of config.auth.keys) {
    keys[k.id] = {
      maxInflight: k.maxInflight ?? Number.MAX_SAFE_INTEGER,
      maxPriority: k.maxPriority,
      ...(k.tpm === undefined ? {} : { tpm: k.tpm }),
      ...(k.rpm === undefined ? {} : { rpm: k.rpm }),
      ...(k.weight === undefined ? {} : { weight: k.weight }),
      ...(k.tenant === undefined ? {} : { tenant: k.tenant }),
    };
  }
  // A team's keys share its budget and weight (`auth.keys[].tenant`).
  const tenants: Record<string, ResolvedTenant> = { ...config.tenants };
  return markResolved({
    lanes,
    // The gateway refuses a model not in the config before it reaches a lane.
    defaults: passThroughLane(),
    groups,
    keys,
    tenants,
    accounts,
    // The gateway bound: in flight across every lane, and requests admitted before their body.
    admission: { maxInflight: config.admission.maxConcurrency, maxQueued: config.admission.maxQueued },
    ...(clock ? { clock } : {}),
    ...(store ? { store } : {}),
  });
}

function lane(config: GatewayConfig, m: ModelConfig, account: string | undefined): ResolvedLane {
  const bounded = (tag: string | undefined): tag is string =>
    tag !== undefined && Object.hasOwn(config.gpuGroups, tag);
  return {
    limit: laneLimit(m),
    reserve: m.reserve,
    queueLimit: m.queueLimit,
    queueTimeoutMs: m.queueTimeoutMs,
    agingMs: config.admission.agingMs,
    fallback: m.fallback,
    groups: bounded(m.gpuGroup) ? [gpu(m.gpuGroup)] : [],
    ...(account === undefined ? {} : { account }),
    // A bucket's reserve comes with it (normalize.ts sets both); without one the lane has no bucket.
    ...(m.tpm === undefined ? {} : { tpm: m.tpm, tpmReserve: m.tpmReserve }),
    ...(m.rpm === undefined ? {} : { rpm: m.rpm, rpmReserve: m.rpmReserve }),
    ...(m.tpmShares === undefined ? {} : { tpmShares: m.tpmShares }),
    ...(m.rpmShares === undefined ? {} : { rpmShares: m.rpmShares }),
    ...(m.shareAbove === undefined ? {} : { shareAbove: m.shareAbove }),
    pods: m.pods.map((p) => ({
      id: p.url,
      maxInflight: p.maxInflight,
      // The model's own group is already on the lane's path; a pod joins only another bounded one.
      ...(bounded(p.gpuGroup) && p.gpuGroup !== m.gpuGroup ? { gpuGroup: gpu(p.gpuGroup) } : {}),
    })),
    // The polling settings stay with the gateway (saturation.ts); the core's width needs the floor.
    adaptive: m.adaptive === false ? false : { floor: m.adaptive.floor },
    breaker: m.breaker,
    maxQuotaPauseMs: m.maxQuotaPauseMs,
  };
}
