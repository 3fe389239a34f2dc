/**
 * The gateway configuration: the normalized {@link GatewayConfig} type and {@link parseConfig},
 * the one validator every entry point goes through (YAML file, JSON, the demo, tests). The YAML
 * shape (snake_case, DESIGN §3.4) is in `raw.ts`; defaults that depend on other keys and the checks
 * across keys are in `normalize.ts`. Reference: `docs/config.md`.
 */
import type { Priority } from "../core/priority.js";
import { ConfigErrors, fromZodIssue, type Issue, toConfigError } from "./issues.js";
import type { StoreConfig } from "./leaves.js";
import { normalize } from "./normalize.js";
import { type LOG_LEVELS, type MODES, type ON_STORE_ERROR, RawConfigSchema } from "./raw.js";

export type { StoreConfig } from "./leaves.js";

/** `enforce` refuses; `shadow` counts and logs what would be refused and refuses nothing. */
export type AdmissionMode = (typeof MODES)[number];
/** What a replica does when the fleet store is unreachable (DESIGN §5). */
export type OnStoreError = (typeof ON_STORE_ERROR)[number];
/** pino log level. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A validated, normalized gateway config: camelCase, durations in ms, sizes in bytes, defaults applied. */
export interface GatewayConfig {
  readonly listen: { readonly host: string; readonly port: number };
  readonly store: StoreConfig;
  readonly fleet: FleetConfig;
  readonly admission: AdmissionConfig;
  readonly auth: AuthConfig;
  readonly admin: { readonly keys: readonly AdminKeyConfig[] };
  /** In file order; names are unique. */
  readonly models: readonly ModelConfig[];
  readonly routes: readonly RouteConfig[];
  /** Bounded GPU groups by name. A pod tag not listed here is an unbounded tag. */
  readonly gpuGroups: Readonly<Record<string, GpuGroupConfig>>;
  readonly accounts: Readonly<Record<string, AccountConfig>>;
  readonly log: { readonly level: LogLevel };
}

/** Fleet mode (DESIGN §5); only used when `store.kind` is `redis`. */
export interface FleetConfig {
  readonly leaseTtlMs: number;
  readonly onStoreError: OnStoreError;
  /** Divides fleet limits when the store is down and `onStoreError` is `local`. */
  readonly expectedReplicas: number;
}

/** The gateway-wide budget and the request-reading bounds (DESIGN §3.1). */
export interface AdmissionConfig {
  readonly mode: AdmissionMode;
  readonly maxConcurrency: number;
  /** Resolved: `max_queued: 0` becomes `maxConcurrency`. */
  readonly maxQueued: number;
  readonly queueTimeoutMs: number;
  readonly maxBodyBytes: number;
  readonly maxBufferedBytes: number;
  /** Resolved: `parse_permits: 0` becomes `os.availableParallelism()`. */
  readonly parsePermits: number;
  readonly headerTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly agingMs: number;
}

/** Client keys. `open: true` allows unauthenticated use off loopback too. */
export interface AuthConfig {
  readonly open: boolean;
  readonly keys: readonly ClientKeyConfig[];
}

/** A client key: only its SHA-256 digest is ever held. */
export interface ClientKeyConfig {
  readonly id: string;
  /** The 32 raw bytes of the SHA-256 of the bearer token. */
  readonly sha256: Buffer;
  /** Requests asking for a higher class are lowered to this one. */
  readonly maxPriority: Priority;
  /** In flight + queued for this key; unset = no per-key bound. */
  readonly maxInflight?: number;
}

/** An admin key (dashboard and telemetry off loopback). */
export interface AdminKeyConfig {
  readonly id: string;
  readonly sha256: Buffer;
}

/** One configured model: a lane, its pods and their budgets. */
export interface ModelConfig {
  /** As clients ask for it (`model` in the body or `X-Sluice-Model`). */
  readonly name: string;
  /** The lane limit; 0 = no lane bound (the Governor's pass-through lane). */
  readonly maxConcurrentRequests: number;
  /** Clamped to `maxConcurrentRequests − 1` (0 when that is negative). */
  readonly reserve: number;
  readonly queueLimit: number;
  readonly queueTimeoutMs: number;
  readonly tpm?: number;
  readonly rpm?: number;
  /** Another model's name, used when every pod of this one is tripped. */
  readonly fallback?: string;
  /** Name of the environment variable holding the upstream key; never the key itself. */
  readonly upstreamApiKeyEnv?: string;
  /** Resolved: the model's own `mode`, else `admission.mode`. */
  readonly mode: AdmissionMode;
  /**
   * Lane-level group: every call of this model also takes a slot in it (the Governor's lane
   * `group`), whichever pod serves it. Never equal to one of its pods' bounded `gpuGroup`.
   */
  readonly gpuGroup?: string;
  readonly adaptive: AdaptiveConfig | false;
  readonly breaker: BreakerConfig;
  /** At least one. */
  readonly pods: readonly PodConfig[];
}

/** AIMD pod width (DESIGN §1.3). */
export interface AdaptiveConfig {
  readonly floor: number;
  /** `vllm:num_requests_waiting` above this is a congestion event. */
  readonly maxWaiting: number;
  readonly metricsPollMs: number;
}

/** Per-pod circuit breaker (DESIGN §1.4). */
export interface BreakerConfig {
  readonly failThreshold: number;
  readonly baseCooldownMs: number;
  readonly maxCooldownMs: number;
  readonly backoffFactor: number;
}

/** One upstream base URL. */
export interface PodConfig {
  /** Normalized (`http://10.0.0.5:8000`, no bare trailing slash); the pod's id. */
  readonly url: string;
  readonly maxInflight: number;
  /** Resolved: the pod's `gpu_group`, else the URL's hostname. Bounded only if listed in `gpuGroups`. */
  readonly gpuGroup: string;
  readonly metricsUrl?: string;
}

/** A path prefix proxied to a model, for non-OpenAI APIs. */
export interface RouteConfig {
  readonly match: string;
  readonly model: string;
}

/** A bounded GPU group. */
export interface GpuGroupConfig {
  readonly maxInflight: number;
}

/** A provider account shared by several models. */
export interface AccountConfig {
  readonly maxInflight?: number;
  readonly tpm?: number;
  readonly rpm?: number;
  readonly models: readonly string[];
}

/** Something valid but probably not what was meant (e.g. a clamped `reserve`). */
export interface ConfigWarning {
  readonly path: string;
  readonly message: string;
}

/** Options of {@link parseConfig}. */
export interface ParseOptions {
  /** Called once per warning; nothing is logged otherwise. */
  readonly onWarning?: (warning: ConfigWarning) => void;
}

/** Problems or a config; the loader uses the problems' segments to find YAML line numbers. */
export type Validation = { ok: true; config: GatewayConfig } | { ok: false; issues: Issue[] };

/** Validates without throwing. Key checks run only when the shape is right. */
export function validateConfig(input: unknown, options: ParseOptions = {}): Validation {
  const parsed = RawConfigSchema.safeParse(input, { reportInput: true });
  if (!parsed.success) return { ok: false, issues: parsed.error.issues.flatMap(fromZodIssue) };
  return normalize(parsed.data, options.onWarning);
}

/**
 * Validates a config object (parsed YAML or JSON, snake_case keys) and returns it normalized.
 *
 * @param source named in the error message (a file name).
 * @throws ConfigErrors (a {@link ConfigError}) for the first problem, with every problem in `issues`.
 */
export function parseConfig(input: unknown, source?: string, options: ParseOptions = {}): GatewayConfig {
  const result = validateConfig(input, options);
  if (result.ok) return result.config;
  throw new ConfigErrors(
    result.issues.map((issue) => toConfigError(issue, source)),
    source,
  );
}
