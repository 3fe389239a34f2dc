/**
 * The config as operators write it: snake_case keys, strict objects (an unknown key is an error
 * with a "did you mean"), scalars already converted to bytes and milliseconds, constant defaults
 * applied from the one table (`core/defaults.ts`). Defaults that depend on other keys (a model's
 * `queue_limit`, a pod's `gpu_group`, …), the ones whose absence a warning needs to see, and the
 * checks across keys are applied afterwards, in `normalize.ts`. A key of a feature that is not
 * built yet is refused with an error that says so (`notBuilt` in leaves.ts; none is left today).
 */
import { z } from "zod";
import { DEFAULTS } from "../core/defaults.js";
import { ON_STORE_ERROR } from "../core/fleet-options.js";
import { PRIORITIES } from "../core/priority.js";
import { expecting, strictErrors } from "./issues.js";
import {
  atLeast,
  bool,
  cidr,
  duration,
  envVarName,
  httpUrl,
  int,
  listen,
  name,
  notBuilt,
  oneOf,
  optional,
  pathPrefix,
  positive,
  required,
  sha256,
  size,
  store,
  withDefault,
} from "./leaves.js";
import { redispatchStatuses } from "./redispatch-statuses.js";

const G = DEFAULTS.gateway;

/** Admission and per-model enforcement: `shadow` counts and logs what would be refused, refuses nothing. */
export const MODES = ["enforce", "shadow"] as const;
/** pino levels. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

/**
 * A strict object with its own "expected" phrase; `optionalSection` lets it be left out. Absent keys
 * are filled in as `undefined` first, so each leaf decides what absence means (its default, or an
 * error) instead of zod reporting every absent key as missing.
 */
function section<S extends z.core.$ZodLooseShape>(shape: S, what: string) {
  const keys = Object.keys(shape);
  const absent = Object.fromEntries(keys.map((k) => [k, undefined]));
  return z.preprocess(
    (v) => (typeof v === "object" && v !== null && !Array.isArray(v) ? { ...absent, ...v } : v),
    z.strictObject(shape, strictErrors(keys, what)),
  );
}
const optionalSection = <T extends z.ZodType>(schema: T) => z.preprocess((v) => v ?? {}, schema);
const list = <T extends z.ZodType>(item: T, what: string, min = 0) =>
  z.array(item, expecting(what)).min(min, expecting(what));
const optionalList = <T extends z.ZodType>(item: T, what: string) =>
  z.preprocess((v) => v ?? [], list(item, what));
const mapping = <T extends z.ZodType>(value: T, what: string) =>
  z.preprocess((v) => v ?? {}, z.record(z.string(), value, expecting(what)));

const admission = section(
  {
    mode: withDefault(oneOf(...MODES), G.mode),
    // Left unset here: a warning about unreachable bounds only speaks of values someone wrote.
    max_concurrency: optional(int(1)),
    max_queued: optional(int(0)),
    queue_timeout_s: withDefault(duration(), DEFAULTS.lane.queueTimeoutMs),
    max_body_bytes: withDefault(size, G.maxBodyBytes),
    max_buffered_bytes: withDefault(size, G.maxBufferedBytes),
    max_json_depth: withDefault(int(1), G.maxJsonDepth),
    max_json_values: withDefault(int(1), G.maxJsonValues),
    header_timeout_s: withDefault(duration(), G.headerTimeoutMs),
    body_timeout_s: withDefault(duration(), G.bodyTimeoutMs),
    drain_timeout_s: withDefault(duration(), G.drainTimeoutMs),
    aging_s: withDefault(duration(), DEFAULTS.lane.agingMs),
  },
  "a mapping of admission settings",
);

const clientKey = section(
  {
    id: required(name("a key id")),
    sha256: required(sha256),
    max_priority: withDefault(oneOf(...PRIORITIES), G.clientKeyMaxPriority),
    max_inflight: optional(int(1)),
    // The key's own token and request budgets, and its share in fair queuing within a class.
    tpm: optional(int(1)),
    rpm: optional(int(1)),
    weight: optional(positive),
    // A name of `tenants` (normalize checks it): the key's calls also count against its budget.
    tenant: optional(name("a tenant name")),
  },
  "a key: { id, sha256, max_priority, max_inflight, tpm, rpm, weight, tenant }",
);

// A team's keys (`auth.keys[].tenant`) sharing one token and request budget and one weight.
const tenant = section(
  {
    tpm: optional(int(1)),
    rpm: optional(int(1)),
    weight: optional(positive),
    max_inflight: notBuilt(
      "a tenant's in-flight bound shared by its keys",
      "set max_inflight on each of the tenant's keys in auth.keys",
    ),
  },
  "a tenant: { tpm, rpm, weight }",
);

const auth = section(
  { open: withDefault(bool, false), keys: optionalList(clientKey, "a list of keys { id, sha256, … }") },
  "a mapping with open, keys",
);

const adminKey = section(
  { id: required(name("a key id")), sha256: required(sha256) },
  "an admin key: { id, sha256 }",
);

const admin = section(
  { keys: optionalList(adminKey, "a list of admin keys { id, sha256 }") },
  "a mapping with keys",
);

const adaptiveOn = section(
  {
    floor: withDefault(int(1), DEFAULTS.adaptive.floor),
    // Left unset here: they only act through a pod's metrics_url, and normalize refuses them without one.
    metrics_poll_s: optional(duration()),
    max_waiting: optional(int(0)),
  },
  "false or a mapping with floor, metrics_poll_s, max_waiting",
);

// `adaptive: false` turns AIMD off; `true`, `{}` or leaving it out turns it on with defaults. A zod
// union would report both branches' failures, so the branch is chosen here and the object's own
// issues are passed through (paths stay relative, zod prefixes them).
const adaptive = z.unknown().transform((v, ctx) => {
  if (v === false) return false as const;
  const parsed = adaptiveOn.safeParse(v === true || v === undefined || v === null ? {} : v, {
    reportInput: true,
  });
  if (parsed.success) return parsed.data;
  // Finalized issues are valid raw issues: zod re-finalizes them with this path prefixed.
  ctx.issues.push(...(parsed.error.issues as z.core.$ZodRawIssue[]));
  return z.NEVER;
});

const breaker = section(
  {
    enabled: withDefault(bool, DEFAULTS.breaker.enabled),
    fail_threshold: withDefault(int(1), DEFAULTS.breaker.failThreshold),
    base_cooldown_s: withDefault(duration(), DEFAULTS.breaker.baseCooldownMs),
    max_cooldown_s: withDefault(duration(), DEFAULTS.breaker.maxCooldownMs),
    backoff_factor: withDefault(atLeast(1), DEFAULTS.breaker.backoffFactor),
  },
  "a mapping with enabled, fail_threshold, base_cooldown_s, max_cooldown_s, backoff_factor",
);

const pod = section(
  {
    url: required(httpUrl),
    max_inflight: optional(int(1)),
    gpu_group: optional(name("a GPU group name")),
    metrics_url: optional(httpUrl),
    redispatch_statuses: optional(redispatchStatuses),
  },
  "a pod: { url, max_inflight, gpu_group, metrics_url, redispatch_statuses }",
);

/** `models[].reasoning_tokens`: the output a request's reasoning effort adds when it names no bound. */
const reasoningTokens = section(
  { minimal: optional(int(0)), low: optional(int(0)), medium: optional(int(0)), high: optional(int(0)) },
  "a mapping of reasoning effort → tokens: { minimal, low, medium, high }",
);

// Shares of a bucket by class (issue 24): numbers ≥ 0 here; ≤ 1, adding up to 1, in normalize.
const classSharesSection = section(
  { interactive: optional(atLeast(0)), default: optional(atLeast(0)), bulk: optional(atLeast(0)) },
  "class shares: { interactive, default, bulk }",
);
const optionalShares = z.preprocess((v) => v ?? undefined, classSharesSection.optional());

// A model's and an account's token and request buckets, their reserves and class shares. A
// reserve is what calls that are not interactive must leave in the bucket; unwritten, normalize
// gives a model its reserve share and an account the largest among its models.
const buckets = {
  tpm: optional(int(1)),
  rpm: optional(int(1)),
  tpm_reserve: optional(int(0)),
  rpm_reserve: optional(int(0)),
  tpm_shares: optionalShares,
  rpm_shares: optionalShares,
  share_above: optional(positive),
};

const model = section(
  {
    name: required(name("a model name")),
    max_concurrent_requests: optional(int(0)),
    reserve: withDefault(int(0), DEFAULTS.lane.reserve),
    queue_limit: optional(int(0)),
    queue_timeout_s: optional(duration()),
    max_quota_pause_s: withDefault(duration(), DEFAULTS.quota.maxPauseMs),
    upstream_timeout_s: withDefault(duration(), G.upstreamTimeoutMs),
    stream_idle_timeout_s: withDefault(duration(), G.streamIdleTimeoutMs),
    ...buckets,
    default_max_tokens: withDefault(int(1), G.defaultMaxTokens),
    image_tokens: withDefault(int(0), G.imageTokens),
    reasoning_tokens: z.preprocess((v) => v ?? undefined, reasoningTokens.optional()),
    // Metered streams ask the pod for their usage (gateway/stream-options.ts); false: never.
    ask_stream_usage: withDefault(bool, true),
    fallback: optional(name("a model name")),
    upstream_api_key_env: optional(envVarName),
    mode: optional(oneOf(...MODES)),
    gpu_group: optional(name("a GPU group name")),
    adaptive,
    breaker: optionalSection(breaker),
    pods: list(pod, "a list of at least one pod { url, … }", 1),
  },
  "a model: { name, pods, … }",
);

const route = section(
  { match: required(pathPrefix), model: required(name("a model name")) },
  "a route: { match, model }",
);

const gpuGroup = section({ max_inflight: required(int(1)) }, "a GPU group: { max_inflight }");

const accountAdaptiveOn = section(
  { floor: withDefault(int(1), DEFAULTS.adaptive.floor) },
  "false or a mapping with floor",
);

// As a model's `adaptive`: `false` off; `true`, `{}` or absent on with defaults (normalize turns it
// off for an account without max_inflight, the cap it adapts).
const accountAdaptive = z.unknown().transform((v, ctx) => {
  if (v === false) return false as const;
  const parsed = accountAdaptiveOn.safeParse(v === true || v === undefined || v === null ? {} : v, {
    reportInput: true,
  });
  if (parsed.success) return { ...parsed.data, written: v !== undefined && v !== null };
  ctx.issues.push(...(parsed.error.issues as z.core.$ZodRawIssue[]));
  return z.NEVER;
});

// At least one of max_inflight, tpm, rpm (normalize checks it): an account with none bounds nothing.
const account = section(
  {
    max_inflight: optional(int(1)),
    ...buckets,
    adaptive: accountAdaptive,
    max_quota_pause_s: withDefault(duration(), DEFAULTS.quota.maxPauseMs),
    models: list(required(name("a model name")), "a list of model names", 1),
  },
  "an account: { max_inflight, tpm, rpm, tpm_reserve, rpm_reserve, tpm_shares, rpm_shares, share_above, adaptive, max_quota_pause_s, models }",
);

const fleet = section(
  {
    lease_ttl_s: withDefault(duration(), DEFAULTS.fleet.leaseTtlMs),
    on_store_error: withDefault(oneOf(...ON_STORE_ERROR), DEFAULTS.fleet.onStoreError),
    expected_replicas: withDefault(int(1), DEFAULTS.fleet.expectedReplicas),
    prefix: withDefault(name("a key prefix"), DEFAULTS.fleet.prefix),
  },
  "fleet settings: { lease_ttl_s, on_store_error, expected_replicas, prefix }",
);

const log = section({ level: withDefault(oneOf(...LOG_LEVELS), G.logLevel) }, "a mapping with level");

/** The whole file. */
export const RawConfigSchema = section(
  {
    listen: withDefault(listen, G.listen),
    store: withDefault(store, { kind: "memory" } as const),
    // Leases, store outages and replica counts only mean something with a shared (Redis) store:
    // normalize refuses the section with store: memory.
    fleet: optionalSection(fleet),
    admission: optionalSection(admission),
    auth: optionalSection(auth),
    admin: optionalSection(admin),
    // TLS on the gateway's own listener: refused as not built, never accepted and ignored.
    tls: notBuilt(
      "TLS on the gateway's own listener",
      "terminate TLS in a proxy in front of the gateway and list that proxy in trust_proxy",
    ),
    // The proxies whose X-Forwarded-For / Forwarded is believed (client-address.ts).
    trust_proxy: optionalList(required(cidr), "a list of IP addresses or CIDR blocks of trusted proxies"),
    models: list(model, "a list of at least one model { name, pods, … }", 1),
    routes: optionalList(route, "a list of routes { match, model }"),
    gpu_groups: mapping(gpuGroup, "a mapping of GPU group name → { max_inflight }"),
    accounts: mapping(account, "a mapping of account name → { max_inflight, tpm, rpm, models }"),
    tenants: mapping(tenant, "a mapping of tenant name → { tpm, rpm, weight }"),
    log: optionalSection(log),
  },
  "a mapping with listen, store, fleet, admission, auth, admin, trust_proxy, tls, models, routes, gpu_groups, accounts, tenants, log",
);

/** The config as written, scalars converted, constant defaults applied. */
export type RawConfig = z.output<typeof RawConfigSchema>;
/** One entry of `models`, as written. */
export type RawModel = RawConfig["models"][number];
