/**
 * The config as operators write it (DESIGN §3.4): snake_case keys, strict objects (an unknown key is
 * an error with a "did you mean"), scalars already converted to bytes and milliseconds, constant
 * defaults applied. Defaults that depend on other keys (a model's `queue_limit`, a pod's
 * `gpu_group`, …) and the checks across keys are applied afterwards, in `normalize.ts`.
 */
import { z } from "zod";
import { PRIORITIES } from "../core/priority.js";
import { expecting, strictErrors } from "./issues.js";
import {
  atLeast,
  bool,
  duration,
  envVarName,
  httpUrl,
  int,
  listen,
  name,
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

const MiB = 2 ** 20;

/** Every constant default, in output units (ms, bytes). `docs/config.md` lists the same values. */
export const DEFAULTS = {
  listen: { host: "127.0.0.1", port: 8080 },
  leaseTtlMs: 15_000,
  onStoreError: "local",
  expectedReplicas: 2,
  mode: "enforce",
  maxConcurrency: 32,
  maxQueued: 0,
  queueTimeoutMs: 30_000,
  maxBodyBytes: 20 * MiB,
  maxBufferedBytes: 256 * MiB,
  parsePermits: 0,
  headerTimeoutMs: 10_000,
  bodyTimeoutMs: 30_000,
  agingMs: 60_000,
  /** A model's `max_concurrent_requests`, and a pod's `max_inflight`, when nothing says otherwise. */
  maxInflight: 32,
  reserve: 1,
  /** A model's `queue_limit` is this many times its `max_concurrent_requests`. */
  queueLimitFactor: 4,
  floor: 4,
  maxWaiting: 5,
  metricsPollMs: 1000,
  failThreshold: 1,
  baseCooldownMs: 500,
  maxCooldownMs: 30_000,
  backoffFactor: 2,
  maxPriority: "default",
  logLevel: "info",
} as const;

/** Admission and per-model enforcement: `shadow` counts and logs what would be refused, refuses nothing. */
export const MODES = ["enforce", "shadow"] as const;
/** What a replica does when the fleet store is unreachable (DESIGN §5). */
export const ON_STORE_ERROR = ["local", "open", "closed"] as const;
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

const fleet = section(
  {
    lease_ttl_s: withDefault(duration(), DEFAULTS.leaseTtlMs),
    on_store_error: withDefault(oneOf(...ON_STORE_ERROR), DEFAULTS.onStoreError),
    expected_replicas: withDefault(int(1), DEFAULTS.expectedReplicas),
  },
  "a mapping with lease_ttl_s, on_store_error, expected_replicas",
);

const admission = section(
  {
    mode: withDefault(oneOf(...MODES), DEFAULTS.mode),
    max_concurrency: withDefault(int(1), DEFAULTS.maxConcurrency),
    max_queued: withDefault(int(0), DEFAULTS.maxQueued),
    queue_timeout_s: withDefault(duration(), DEFAULTS.queueTimeoutMs),
    max_body_bytes: withDefault(size, DEFAULTS.maxBodyBytes),
    max_buffered_bytes: withDefault(size, DEFAULTS.maxBufferedBytes),
    parse_permits: withDefault(int(0), DEFAULTS.parsePermits),
    header_timeout_s: withDefault(duration(), DEFAULTS.headerTimeoutMs),
    body_timeout_s: withDefault(duration(), DEFAULTS.bodyTimeoutMs),
    aging_s: withDefault(duration(), DEFAULTS.agingMs),
  },
  "a mapping of admission settings",
);

const clientKey = section(
  {
    id: required(name("a key id")),
    sha256: required(sha256),
    max_priority: withDefault(oneOf(...PRIORITIES), DEFAULTS.maxPriority),
    max_inflight: optional(int(1)),
  },
  "a key: { id, sha256, max_priority, max_inflight }",
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
    floor: withDefault(int(1), DEFAULTS.floor),
    metrics_poll_s: withDefault(duration(), DEFAULTS.metricsPollMs),
    max_waiting: withDefault(int(0), DEFAULTS.maxWaiting),
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
    fail_threshold: withDefault(int(1), DEFAULTS.failThreshold),
    base_cooldown_s: withDefault(duration(), DEFAULTS.baseCooldownMs),
    max_cooldown_s: withDefault(duration(), DEFAULTS.maxCooldownMs),
    backoff_factor: withDefault(atLeast(1), DEFAULTS.backoffFactor),
  },
  "a mapping with fail_threshold, base_cooldown_s, max_cooldown_s, backoff_factor",
);

const pod = section(
  {
    url: required(httpUrl),
    max_inflight: optional(int(1)),
    gpu_group: optional(name("a GPU group name")),
    metrics_url: optional(httpUrl),
  },
  "a pod: { url, max_inflight, gpu_group, metrics_url }",
);

const model = section(
  {
    name: required(name("a model name")),
    max_concurrent_requests: optional(int(0)),
    reserve: withDefault(int(0), DEFAULTS.reserve),
    queue_limit: optional(int(0)),
    queue_timeout_s: optional(duration()),
    tpm: optional(positive),
    rpm: optional(positive),
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

const account = section(
  {
    max_inflight: optional(int(1)),
    tpm: optional(positive),
    rpm: optional(positive),
    models: list(required(name("a model name")), "a list of model names", 1),
  },
  "an account: { max_inflight, tpm, rpm, models }",
);

const log = section({ level: withDefault(oneOf(...LOG_LEVELS), DEFAULTS.logLevel) }, "a mapping with level");

/** The whole file. */
export const RawConfigSchema = section(
  {
    listen: withDefault(listen, DEFAULTS.listen),
    store: withDefault(store, { kind: "memory" }),
    fleet: optionalSection(fleet),
    admission: optionalSection(admission),
    auth: optionalSection(auth),
    admin: optionalSection(admin),
    models: list(model, "a list of at least one model { name, pods, … }", 1),
    routes: optionalList(route, "a list of routes { match, model }"),
    gpu_groups: mapping(gpuGroup, "a mapping of GPU group name → { max_inflight }"),
    accounts: mapping(account, "a mapping of account name → { max_inflight, tpm, rpm, models }"),
    log: optionalSection(log),
  },
  "a mapping with listen, store, fleet, admission, auth, admin, models, routes, gpu_groups, accounts, log",
);

/** The config as written, scalars converted, constant defaults applied. */
export type RawConfig = z.output<typeof RawConfigSchema>;
/** One entry of `models`, as written. */
export type RawModel = RawConfig["models"][number];
