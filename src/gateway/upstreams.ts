/**
 * One keep-alive undici `Pool` per pod (DESIGN §3.1 step 6), sized to the pod's ceiling, and the
 * header rules for crossing the proxy: hop-by-hop headers never cross (the fixed set, and any the
 * `Connection` header names), the client's `Authorization` is never forwarded, and a model's
 * upstream credential is read from the environment variable the config names, at dispatch, and
 * injected.
 */
import { Pool } from "undici";
import type { ModelConfig } from "../config/schema.js";

/** Headers that describe one connection, not the message (RFC 9110 §7.6.1), plus our own. */
const DROP_REQUEST = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "expect",
  "host",
  "authorization",
  "content-length",
]);
const DROP_RESPONSE = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "trailer",
  "upgrade",
  "proxy-connection",
]);

/**
 * undici's own connect timeout. A pod's upstream timeout below it bounds the connect too: a pod
 * whose SYNs go unanswered must not hold a call longer than its answer may take.
 */
const CONNECT_TIMEOUT_MS = 10_000;
/**
 * An idle connection is closed before the usual server keep-alive timeouts (uvicorn's and
 * Node's 5 s): a call written to a connection the pod is closing at that moment could not be
 * re-dispatched, since nothing proves the pod did not read it.
 */
const KEEP_ALIVE_MS = 4_000;

export interface PodTarget {
  pool: Pool;
  /** The pod URL's path without a trailing slash ("" for a bare origin). */
  basePath: string;
}

/** A model's bounds on one upstream call, as undici's per-request options. */
export interface CallTimeouts {
  /** `upstream_timeout_s`: from the request being sent to the answer's headers. */
  readonly headersTimeout: number;
  /** `stream_idle_timeout_s`: between two chunks of the answer (not while the client is slow). */
  readonly bodyTimeout: number;
}

export class Upstreams {
  readonly #pods = new Map<string, PodTarget>();
  readonly #credentialEnv = new Map<string, string>();
  readonly #timeouts = new Map<string, CallTimeouts>();
  /** Pools a reload replaced, closing once their calls are done (`update`). */
  readonly #retired = new Set<Pool>();

  constructor(
    models: readonly ModelConfig[],
    readonly env: NodeJS.ProcessEnv,
  ) {
    // One URL is one server: its pool's connect timeout is the shortest any of its models allows.
    const connectMs = new Map<string, number>();
    for (const model of models) {
      for (const pod of model.pods) {
        const ms = Math.min(connectMs.get(pod.url) ?? CONNECT_TIMEOUT_MS, model.upstreamTimeoutMs);
        connectMs.set(pod.url, ms);
      }
    }
    for (const model of models) {
      if (model.upstreamApiKeyEnv !== undefined) this.#credentialEnv.set(model.name, model.upstreamApiKeyEnv);
      this.#timeouts.set(model.name, {
        headersTimeout: model.upstreamTimeoutMs,
        bodyTimeout: model.streamIdleTimeoutMs,
      });
      for (const pod of model.pods) {
        if (this.#pods.has(pod.url)) continue;
        const url = new URL(pod.url);
        this.#pods.set(pod.url, {
          pool: new Pool(url.origin, {
            // Enforce mode never has more than max_inflight on a pod; shadow mode lets calls
            // through past it, and a pool of max_inflight would queue them here instead.
            connections: model.mode === "shadow" ? null : pod.maxInflight,
            pipelining: 1,
            keepAliveTimeout: KEEP_ALIVE_MS,
            keepAliveMaxTimeout: KEEP_ALIVE_MS,
            connectTimeout: connectMs.get(pod.url)!,
            // Every call passes its model's own bounds (timeouts()); these only back them up.
            headersTimeout: model.upstreamTimeoutMs,
            bodyTimeout: model.streamIdleTimeoutMs,
          }),
          basePath: url.pathname.replace(/\/+$/, ""),
        });
      }
    }
  }

  target(pod: string): PodTarget {
    const t = this.#pods.get(pod);
    if (t === undefined) throw new Error(`no pool for pod ${pod}`);
    return t;
  }

  /** The upstream timeouts of `model`'s calls. */
  timeouts(model: string): CallTimeouts {
    const t = this.#timeouts.get(model);
    if (t === undefined) throw new Error(`no model ${model}`);
    return t;
  }

  /** Request headers to send upstream for `model`; `requestId` goes as `X-Sluice-Request-Id`. */
  requestHeaders(
    incoming: NodeJS.Dict<string | string[]>,
    model: string,
    contentLength: number | undefined,
    requestId: string,
  ): Record<string, string | string[]> {
    const named = connectionTokens(incoming.connection);
    const out: Record<string, string | string[]> = {};
    for (const name in incoming) {
      if (DROP_REQUEST.has(name) || name.startsWith("x-sluice-") || named?.has(name)) continue;
      const v = incoming[name];
      if (v !== undefined) out[name] = v;
    }
    if (contentLength !== undefined) out["content-length"] = String(contentLength);
    // The pod's logs can be joined to the gateway's line for the same call.
    out["x-sluice-request-id"] = requestId;
    const envName = this.#credentialEnv.get(model);
    if (envName !== undefined) {
      const secret = this.env[envName];
      if (secret) out.authorization = `Bearer ${secret}`;
    }
    return out;
  }

  /** Closes every pool once its calls are done. */
  async close(): Promise<void> {
    await Promise.all([...this.#pods.values()].map((t) => t.pool.close().catch(() => t.pool.destroy())));
  }

  /** Aborts every call still going to a pod and closes the pools (the drain deadline). */
  async destroy(): Promise<void> {
    await Promise.all([...this.#retired].map((pool) => pool.destroy().catch(() => undefined)));
    await Promise.all([...this.#pods.values()].map((t) => t.pool.destroy().catch(() => undefined)));
  }

  /**
   * Takes a reloaded config's pods and per-model settings in place (SIGHUP), so a call in flight,
   * and its re-dispatch to a pod the reload added, keeps finding a pool. Every pod listed gets a
   * pool built for the new config (a changed `max_inflight` must resize it: a pool too small would
   * queue calls inside undici); each pool replaced closes once its calls are done. A pod or model
   * no longer listed keeps its pool and settings: the Governor grants it no new call, but its
   * waiters are still granted there and must reach it (idle connections close on their own).
   */
  update(models: readonly ModelConfig[]): void {
    const next = new Upstreams(models, this.env);
    const retired: PodTarget[] = [];
    for (const [url, t] of next.#pods) {
      const old = this.#pods.get(url);
      if (old !== undefined) retired.push(old);
      this.#pods.set(url, t);
    }
    for (const m of models) {
      const envName = next.#credentialEnv.get(m.name);
      if (envName === undefined) this.#credentialEnv.delete(m.name);
      else this.#credentialEnv.set(m.name, envName);
      this.#timeouts.set(m.name, next.#timeouts.get(m.name)!);
    }
    for (const { pool } of retired) {
      this.#retired.add(pool);
      void pool
        .close()
        .catch(() => pool.destroy())
        .finally(() => this.#retired.delete(pool));
    }
  }
}

/**
 * Response headers to pass back to the client, as the flat `[name, value, …]` list
 * `writeHead` takes (no intermediate object). Hop-by-hop headers are dropped, and so are the
 * ones the pod's `Connection` header names.
 */
export function flatResponseHeaders(
  upstream: Record<string, string | string[] | undefined>,
  extra: Record<string, string | number>,
): string[] {
  const named = connectionTokens(upstream.connection);
  const out: string[] = [];
  for (const name in upstream) {
    // A header sluice sets itself (its RateLimit numbers) replaces the upstream's of that name.
    if (DROP_RESPONSE.has(name) || named?.has(name) || Object.hasOwn(extra, name)) continue;
    const v = upstream[name];
    if (v === undefined) continue;
    if (typeof v === "string") out.push(name, v);
    else for (const each of v) out.push(name, each);
  }
  for (const name in extra) out.push(name, String(extra[name]));
  return out;
}

/**
 * The header names a `Connection` header lists (RFC 9110 §7.6.1: they are hop-by-hop too), lower
 * case; undefined when there is none (the common case costs no allocation).
 */
function connectionTokens(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined;
  const names = new Set<string>();
  for (const line of typeof value === "string" ? [value] : value) {
    for (const token of line.split(",")) {
      const name = token.trim().toLowerCase();
      if (name !== "") names.add(name);
    }
  }
  return names;
}
