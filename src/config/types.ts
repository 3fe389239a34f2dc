/**
 * The validated gateway configuration as the code reads it (camelCase, durations in ms, sizes in
 * bytes, defaults applied), and the options of the validator. Types only: `schema.ts` produces
 * them, `normalize.ts`/`checks.ts`/`reach.ts` build and check them, the gateway reads them.
 */

import type { BreakerSettings } from "../core/breaker.js";
import type { ResolvedShares } from "../core/class-shares.js";
import type { OnStoreError } from "../core/fleet-options.js";
import type { AdaptiveSettings } from "../core/options.js";
import type { Priority } from "../core/priority.js";
import type { Cidr } from "./cidr.js";
import type { Issue } from "./issues.js";
import type { StoreConfig } from "./leaves.js";
import type { LOG_LEVELS, MODES } from "./raw.js";

export type { StoreConfig } from "./leaves.js";

/** `enforce` refuses; `shadow` counts and logs what would be refused and refuses nothing. */
export type AdmissionMode = (typeof MODES)[number];
/** pino log level. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Fleet mode's settings, normalized (durations in ms). */
export interface FleetConfig {
  readonly leaseTtlMs: number;
  readonly onStoreError: OnStoreError;
  readonly expectedReplicas: number;
  readonly prefix: string;
}

/** A validated, normalized gateway config: camelCase, durations in ms, sizes in bytes, defaults applied. */
export interface GatewayConfig {
  readonly listen: { readonly host: string; readonly port: number };
  readonly store: StoreConfig;
  /** Fleet settings (used with a Redis store; refused with `memory` when written). */
  readonly fleet: FleetConfig;
  readonly admission: AdmissionConfig;
  readonly auth: AuthConfig;
  readonly admin: { readonly keys: readonly AdminKeyConfig[] };
  /**
   * `trust_proxy`: the proxies whose forwarding headers are believed. A loopback peer that
   * forwards for someone is not local unless it is listed here (gateway/client-address.ts).
   */
  readonly trustProxy: readonly Cidr[];
  /** In file order; names are unique. */
  readonly models: readonly ModelConfig[];
  readonly routes: readonly RouteConfig[];
  /** Bounded GPU groups by name. A pod tag not listed here is an unbounded tag. */
  readonly gpuGroups: Readonly<Record<string, GpuGroupConfig>>;
  readonly accounts: Readonly<Record<string, AccountConfig>>;
  /** Tenants by name (groups of keys sharing a budget); empty when none. */
  readonly tenants: Readonly<Record<string, TenantConfig>>;
  readonly log: { readonly level: LogLevel };
  /**
   * Valid but probably not what was meant: a clamped reserve, a bound another bound makes
   * unreachable, a GPU group that bounds nothing. One line each, `path: message`, in the order found;
   * `sluice serve` prints them at start and the gateway can show them (e.g. in `/readyz`).
   */
  readonly warnings: readonly string[];
}

/** The gateway-wide budget and the request-reading bounds. */
export interface AdmissionConfig {
  readonly mode: AdmissionMode;
  readonly maxConcurrency: number;
  /** Resolved: `max_queued: 0` becomes `maxConcurrency`. */
  readonly maxQueued: number;
  readonly queueTimeoutMs: number;
  readonly maxBodyBytes: number;
  readonly maxBufferedBytes: number;
  /** A JSON body nesting deeper is refused 400 while it is read (json-guard.ts). */
  readonly maxJsonDepth: number;
  /** A JSON body holding more values (objects, arrays, strings, numbers, literals) is refused 400. */
  readonly maxJsonValues: number;
  readonly headerTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  /** After SIGTERM, calls still running this long are cut and the gateway closes. */
  readonly drainTimeoutMs: number;
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
  /** Tokens per minute for this key's calls (its own bucket); unset = none. */
  readonly tpm?: number;
  /** Requests per minute for this key's calls; unset = none. */
  readonly rpm?: number;
  /** Its share in fair queuing within a class; unset = 1. */
  readonly weight?: number;
  /** The tenant (a name of `tenants`) whose budget the key's calls also count against. */
  readonly tenant?: string;
}

/** A tenant: keys (`auth.keys[].tenant`) sharing one token and request budget and one weight. */
export interface TenantConfig {
  readonly tpm?: number;
  readonly rpm?: number;
  readonly weight?: number;
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
  /** The lane limit; 0 = no bound of its own: the Governor's lane gets its pods' total (`laneLimit`, reach.ts). */
  readonly maxConcurrentRequests: number;
  /** Clamped to `maxConcurrentRequests − 1` (0 when that is negative). */
  readonly reserve: number;
  readonly queueLimit: number;
  readonly queueTimeoutMs: number;
  /** Longest a provider's quota signal (429 with a reset) pauses one of its pods. */
  readonly maxQuotaPauseMs: number;
  /** A pod's answer must start (status and headers) within this long, else 504 `upstream_timeout`. */
  readonly upstreamTimeoutMs: number;
  /** The longest silence between two chunks of a pod's answer before the call is cut. */
  readonly streamIdleTimeoutMs: number;
  /** Tokens per minute for this model (a token bucket); unset = none. */
  readonly tpm?: number;
  /** Requests per minute for this model; unset = none. */
  readonly rpm?: number;
  /** Tokens of `tpm` only interactive calls may take (with `tpm`): written, or the model's reserve share. */
  readonly tpmReserve?: number;
  /** Requests of `rpm` only interactive calls may take (with `rpm`): written, or the model's reserve share. */
  readonly rpmReserve?: number;
  /** Shares of `tpm` / `rpm` by class past `shareAbove` of the bucket spent (issue 24); unset = none. */
  readonly tpmShares?: ResolvedShares;
  readonly rpmShares?: ResolvedShares;
  readonly shareAbove?: number;
  /** What a request without `max_tokens` / `max_completion_tokens` reserves for its answer. */
  readonly defaultMaxTokens: number;
  /** What one image of unknown size reserves on the token budgets; the tile formula is scaled by it. */
  readonly imageTokens: number;
  /**
   * `reasoning_tokens`: output tokens a request's reasoning effort (`reasoning_effort`, or the
   * Responses API's `reasoning.effort`) adds to `defaultMaxTokens` when it names no output bound
   * (seed 004: reasoning is metered as output). Unset: none.
   */
  readonly reasoningTokens?: Readonly<Record<string, number>>;
  /**
   * `false`: a metered stream is forwarded as the client sent it, never asking for its usage
   * (`stream_options`), for servers that refuse that option; absent: it asks.
   */
  readonly askStreamUsage?: false;
  /** Another model's name, used when every pod of this one is tripped or quota-paused. */
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

/** AIMD pod width: the core's settings (`floor`) plus the gateway's metrics polling. */
export interface AdaptiveConfig extends Readonly<AdaptiveSettings> {
  /** `vllm:num_requests_waiting` above this is a congestion event. */
  readonly maxWaiting: number;
  readonly metricsPollMs: number;
}

/** Per-pod circuit breaker: the core's settings as they are. */
export type BreakerConfig = Readonly<BreakerSettings>;

/** One upstream base URL. */
export interface PodConfig {
  /** Normalized (`http://10.0.0.5:8000`, no bare trailing slash); the pod's id. */
  readonly url: string;
  readonly maxInflight: number;
  /** Resolved: the pod's `gpu_group`, else the URL's hostname. Bounded only if listed in `gpuGroups`. */
  readonly gpuGroup: string;
  readonly metricsUrl?: string;
  /**
   * Answers that mean this pod did not start the call, so it may go to another pod (429 or 5xx);
   * unset: none does, only a connection that failed before the request was written.
   */
  readonly redispatchStatuses?: readonly number[];
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

/**
 * A provider account shared by several models: one meter across them — calls in flight (under an
 * adaptive cap), tokens and requests per minute, and one quota pause. At least one bound is set.
 */
export interface AccountConfig {
  readonly maxInflight?: number;
  readonly tpm?: number;
  readonly rpm?: number;
  /** Tokens of `tpm` only interactive calls may take: written, or the largest share of its models (0 without `tpm`). */
  readonly tpmReserve: number;
  /** Requests of `rpm` only interactive calls may take: written, or the largest share of its models (0 without `rpm`). */
  readonly rpmReserve: number;
  /** Shares of `tpm` / `rpm` by class past `shareAbove` of the bucket spent (issue 24); unset = none. */
  readonly tpmShares?: ResolvedShares;
  readonly rpmShares?: ResolvedShares;
  readonly shareAbove?: number;
  /** AIMD on `maxInflight` (cut on throttling, grown on success); false without `maxInflight`. */
  readonly adaptive: Readonly<AdaptiveSettings> | false;
  /** Longest one quota signal (a 429 with a reset) pauses the whole account. */
  readonly maxQuotaPauseMs: number;
  readonly models: readonly string[];
}

/** Something valid but probably not what was meant (e.g. a clamped `reserve`). */
export interface ConfigWarning {
  readonly path: string;
  readonly message: string;
}

/** Options of {@link parseConfig}. */
export interface ParseOptions {
  /** Called once per warning (they are also in `config.warnings`); nothing is logged otherwise. */
  readonly onWarning?: (warning: ConfigWarning) => void;
  /**
   * The environment the gateway will run with. When given, a model whose `upstream_api_key_env`
   * names a variable that is unset or empty here is refused (the gateway would send no key).
   * `sluice serve` passes `process.env`. **Default:** not checked.
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Problems or a config; the loader uses the problems' segments to find YAML line numbers. */
export type Validation = { ok: true; config: GatewayConfig } | { ok: false; issues: Issue[] };
