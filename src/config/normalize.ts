/**
 * From the config as written (`RawConfig`, shape already checked) to {@link GatewayConfig}: defaults
 * that depend on other keys (from the one table, `core/defaults.ts`), camelCase, the checks that
 * span keys (`checks.ts`) and the warnings about unreachable bounds (`reach.ts`). Every problem
 * names the key to fix.
 */

import { DEFAULTS } from "../core/defaults.js";
import { clampReserve, defaultQueueLimit } from "../core/options.js";
import { reserveShare } from "../core/rate-options.js";
import {
  Checker,
  checkFallbacks,
  checkKeys,
  checkMetricsPolling,
  checkModelNames,
  checkPodsAcrossModels,
  checkRoutes,
  checkUpstreamKeys,
  refersToModel,
  validName,
} from "./checks.js";
import { classShares } from "./class-shares.js";
import { fleetConfig } from "./fleet.js";
import { formatPath } from "./issues.js";
import { bucketReserve } from "./rate-reserves.js";
import type { RawConfig, RawModel } from "./raw.js";
import { warnUnreachable } from "./reach.js";
import { nearestKey } from "./suggest.js";
import { checkTenants, clientKeys, tenantsOf } from "./tenants.js";
import type {
  AccountConfig,
  ConfigWarning,
  GatewayConfig,
  GpuGroupConfig,
  ModelConfig,
  ParseOptions,
  PodConfig,
  Validation,
} from "./types.js";

const G = DEFAULTS.gateway;

/** Resolves derived defaults, checks the keys against each other and collects the warnings. */
export function normalize(raw: RawConfig, options: ParseOptions = {}): Validation {
  const warnings: ConfigWarning[] = [];
  const c = new Checker((w) => {
    warnings.push(w);
    options.onWarning?.(w);
  });
  const { admission: a } = raw;
  if (a.max_buffered_bytes < a.max_body_bytes) {
    c.error(
      ["admission", "max_buffered_bytes"],
      `a size ≥ admission.max_body_bytes (${a.max_body_bytes} bytes)`,
      a.max_buffered_bytes,
      "one request of the largest allowed size must fit",
    );
  }
  checkKeys(c, raw.auth.keys, ["auth", "keys"]);
  checkKeys(c, raw.admin.keys, ["admin", "keys"]);
  checkTenants(c, raw);

  const models = raw.models.map((m, i) => model(c, m, i, raw));
  const names = checkModelNames(c, raw.models);
  checkFallbacks(c, raw.models, names);
  checkPodsAcrossModels(c, models);
  checkMetricsPolling(c, raw.models);
  if (options.env !== undefined) checkUpstreamKeys(c, models, options.env);
  checkRoutes(c, raw.routes, names);
  const gpuGroups = groups(c, raw, models);
  const accounts = accountsOf(c, raw, names, models);
  const fleet = fleetConfig(c, raw);
  if (c.issues.length > 0) return { ok: false, issues: c.issues };

  const maxConcurrency = a.max_concurrency ?? G.maxConcurrency;
  const config: GatewayConfig = {
    listen: { ...raw.listen },
    store: raw.store,
    fleet,
    admission: {
      mode: a.mode,
      maxConcurrency,
      // 0 (the default) = the same as max_concurrency.
      maxQueued: a.max_queued || maxConcurrency,
      queueTimeoutMs: a.queue_timeout_s,
      maxBodyBytes: a.max_body_bytes,
      maxBufferedBytes: a.max_buffered_bytes,
      maxJsonDepth: a.max_json_depth,
      maxJsonValues: a.max_json_values,
      headerTimeoutMs: a.header_timeout_s,
      bodyTimeoutMs: a.body_timeout_s,
      drainTimeoutMs: a.drain_timeout_s,
      agingMs: a.aging_s,
    },
    auth: {
      open: raw.auth.open,
      keys: clientKeys(raw),
    },
    admin: { keys: raw.admin.keys.map((k) => ({ id: k.id, sha256: k.sha256 })) },
    trustProxy: raw.trust_proxy,
    models,
    routes: raw.routes.map((r) => ({ match: r.match, model: r.model })),
    gpuGroups,
    accounts,
    tenants: tenantsOf(raw),
    log: { level: raw.log.level },
    warnings: [],
  };
  warnUnreachable(c, raw, config);
  return { ok: true, config: { ...config, warnings: warnings.map((w) => `${w.path}: ${w.message}`) } };
}

// Pod max_inflight defaults to the model's limit; the model's limit defaults to the sum of what its
// pods state (unstated pods count 32), or 32 when no pod states one.
function model(c: Checker, m: RawModel, i: number, raw: RawConfig): ModelConfig {
  const at = ["models", i];
  const stated = m.pods.some((p) => p.max_inflight !== undefined);
  const podDefault = m.max_concurrent_requests || G.maxInflight;
  const pods: PodConfig[] = m.pods.map((p) => ({
    url: p.url,
    maxInflight: p.max_inflight ?? podDefault,
    gpuGroup: p.gpu_group ?? new URL(p.url).hostname,
    ...(p.metrics_url === undefined ? {} : { metricsUrl: p.metrics_url }),
    ...(p.redispatch_statuses === undefined ? {} : { redispatchStatuses: p.redispatch_statuses }),
  }));
  const podSum = pods.reduce((sum, p) => sum + p.maxInflight, 0);
  const limit = m.max_concurrent_requests ?? (stated ? podSum : G.maxInflight);
  // The reserve rule of the core: at most limit − 1, so at least one slot serves every class.
  const reserve = clampReserve(m.reserve, limit);
  if (reserve < m.reserve) {
    c.warn({
      path: formatPath([...at, "reserve"]),
      message: `reserve ${m.reserve} clamped to ${reserve} (max_concurrent_requests ${limit} − 1)`,
    });
  }
  const share = reserveShare(reserve, limit);
  const tpmReserve = bucketReserve(c, at, "tpm", m.tpm, m.tpm_reserve, share);
  const rpmReserve = bucketReserve(c, at, "rpm", m.rpm, m.rpm_reserve, share);
  const smallest = Math.min(...pods.map((p) => p.maxInflight));
  if (m.adaptive !== false && m.adaptive.floor > smallest) {
    c.warn({
      path: formatPath([...at, "adaptive", "floor"]),
      message: `floor ${m.adaptive.floor} is above a pod's max_inflight (${smallest}); that pod's width stays at its max_inflight`,
    });
  }
  // The scheduler takes a slot in the lane's groups and in the pod's group: one group at both
  // levels would charge each call twice.
  if (m.gpu_group !== undefined && Object.hasOwn(raw.gpu_groups, m.gpu_group)) {
    const j = pods.findIndex((p) => p.gpuGroup === m.gpu_group);
    if (j >= 0) {
      c.error(
        [...at, "gpu_group"],
        `a group none of this model's pods is in (models[${i}].pods[${j}] is in ${m.gpu_group})`,
        m.gpu_group,
        "a call would take two slots of the same group; tag the pods or the model, not both",
      );
    }
  }
  const seen = new Map<string, number>();
  m.pods.forEach((p, j) => {
    const first = seen.get(p.url);
    if (first !== undefined) {
      c.error([...at, "pods", j, "url"], `a URL not already used by models[${i}].pods[${first}]`, p.url);
    } else seen.set(p.url, j);
  });
  const b = m.breaker;
  if (b.max_cooldown_s < b.base_cooldown_s) {
    c.error(
      [...at, "breaker", "max_cooldown_s"],
      `a duration ≥ base_cooldown_s (${b.base_cooldown_s} ms)`,
      b.max_cooldown_s / 1000,
    );
  }
  return {
    name: m.name,
    maxConcurrentRequests: limit,
    reserve,
    // An unbounded lane (0) still queues for its pods: size the queue from them.
    queueLimit: m.queue_limit ?? defaultQueueLimit(limit || podSum),
    queueTimeoutMs: m.queue_timeout_s ?? raw.admission.queue_timeout_s,
    maxQuotaPauseMs: m.max_quota_pause_s,
    upstreamTimeoutMs: m.upstream_timeout_s,
    streamIdleTimeoutMs: m.stream_idle_timeout_s,
    ...(m.tpm === undefined ? {} : { tpm: m.tpm, tpmReserve }),
    ...(m.rpm === undefined ? {} : { rpm: m.rpm, rpmReserve }),
    ...classShares(c, at, m, raw.store.kind === "redis"),
    defaultMaxTokens: m.default_max_tokens,
    imageTokens: m.image_tokens,
    ...(m.reasoning_tokens === undefined ? {} : { reasoningTokens: reasoningTokensOf(m.reasoning_tokens) }),
    ...(m.ask_stream_usage ? {} : { askStreamUsage: false as const }),
    ...(m.fallback === undefined ? {} : { fallback: m.fallback }),
    ...(m.upstream_api_key_env === undefined ? {} : { upstreamApiKeyEnv: m.upstream_api_key_env }),
    mode: m.mode ?? raw.admission.mode,
    ...(m.gpu_group === undefined ? {} : { gpuGroup: m.gpu_group }),
    adaptive:
      m.adaptive === false
        ? false
        : {
            floor: m.adaptive.floor,
            maxWaiting: m.adaptive.max_waiting ?? G.maxWaiting,
            metricsPollMs: m.adaptive.metrics_poll_s ?? G.metricsPollMs,
          },
    breaker: {
      enabled: b.enabled,
      failThreshold: b.fail_threshold,
      baseCooldownMs: b.base_cooldown_s,
      maxCooldownMs: b.max_cooldown_s,
      backoffFactor: b.backoff_factor,
    },
    pods,
  };
}

function groups(c: Checker, raw: RawConfig, models: readonly ModelConfig[]): Record<string, GpuGroupConfig> {
  const used = new Set(models.flatMap((m) => [...m.pods.map((p) => p.gpuGroup), m.gpuGroup ?? ""]));
  const out: Record<string, GpuGroupConfig> = {};
  for (const [group, g] of Object.entries(raw.gpu_groups)) {
    if (!validName(c, ["gpu_groups", group], group, "a GPU group name")) continue;
    out[group] = { maxInflight: g.max_inflight };
    if (!used.has(group)) {
      const near = nearestKey(group, [...used]);
      c.warn({
        path: formatPath(["gpu_groups", group]),
        message: `no model or pod is in GPU group ${group}, so it bounds nothing${near ? ` (did you mean "${near}"?)` : ""}`,
      });
    }
  }
  return out;
}

function accountsOf(
  c: Checker,
  raw: RawConfig,
  names: Map<string, number>,
  models: readonly ModelConfig[],
): Record<string, AccountConfig> {
  const out: Record<string, AccountConfig> = {};
  const shareOf = new Map(models.map((m) => [m.name, reserveShare(m.reserve, m.maxConcurrentRequests)]));
  const accountOf = new Map<string, string>();
  for (const [account, a] of Object.entries(raw.accounts)) {
    if (!validName(c, ["accounts", account], account, "an account name")) continue;
    a.models.forEach((name, j) => {
      const at = ["accounts", account, "models", j];
      if (!refersToModel(c, at, name, names)) return;
      const other = accountOf.get(name);
      // A call's path has one account; a model listed twice would have two.
      if (other !== undefined) c.error(at, `a model not already in ${formatPath(["accounts", other])}`, name);
      else accountOf.set(name, account);
    });
    if (a.max_inflight === undefined && a.tpm === undefined && a.rpm === undefined) {
      c.error(
        ["accounts", account],
        "at least one of max_inflight, tpm, rpm",
        a,
        "an account with none bounds nothing",
      );
    }
    if (a.adaptive !== false && a.adaptive.written && a.max_inflight === undefined) {
      c.error(
        ["accounts", account, "adaptive"],
        "false, or max_inflight set (adaptive cuts and grows the in-flight cap)",
        a.adaptive.floor,
      );
    }
    // The largest reserve share among its models: each model's interactive callers find theirs.
    const share = Math.max(0, ...a.models.map((m) => shareOf.get(m) ?? 0));
    const at = ["accounts", account];
    const tpmReserve = bucketReserve(c, at, "tpm", a.tpm, a.tpm_reserve, share);
    const rpmReserve = bucketReserve(c, at, "rpm", a.rpm, a.rpm_reserve, share);
    out[account] = {
      ...(a.max_inflight === undefined ? {} : { maxInflight: a.max_inflight }),
      ...(a.tpm === undefined ? {} : { tpm: a.tpm }),
      ...(a.rpm === undefined ? {} : { rpm: a.rpm }),
      tpmReserve,
      rpmReserve,
      ...classShares(c, at, a, raw.store.kind === "redis"),
      adaptive: a.adaptive === false || a.max_inflight === undefined ? false : { floor: a.adaptive.floor },
      maxQuotaPauseMs: a.max_quota_pause_s,
      models: [...a.models],
    };
  }
  return out;
}

/** `reasoning_tokens` without the efforts left unset. */
function reasoningTokensOf(r: NonNullable<RawModel["reasoning_tokens"]>): Readonly<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [effort, tokens] of Object.entries(r)) if (tokens !== undefined) out[effort] = tokens;
  return out;
}
