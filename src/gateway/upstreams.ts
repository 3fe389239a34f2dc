/**
 * One keep-alive undici `Pool` per pod (DESIGN §3.1 step 6), sized to the pod's ceiling, and the
 * header rules for crossing the proxy: hop-by-hop headers never cross, the client's
 * `Authorization` is never forwarded, and a model's upstream credential is read from the
 * environment variable the config names, at dispatch, and injected.
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

export interface PodTarget {
  pool: Pool;
  /** The pod URL's path without a trailing slash ("" for a bare origin). */
  basePath: string;
}

export class Upstreams {
  readonly #pods = new Map<string, PodTarget>();
  readonly #credentialEnv = new Map<string, string>();

  constructor(
    models: readonly ModelConfig[],
    readonly env: NodeJS.ProcessEnv,
    timeouts: { headersTimeoutMs: number; bodyTimeoutMs: number },
  ) {
    for (const model of models) {
      if (model.upstreamApiKeyEnv !== undefined) this.#credentialEnv.set(model.name, model.upstreamApiKeyEnv);
      for (const pod of model.pods) {
        if (this.#pods.has(pod.url)) continue;
        const url = new URL(pod.url);
        this.#pods.set(pod.url, {
          pool: new Pool(url.origin, {
            // Enforce mode never has more than max_inflight on a pod; shadow mode lets calls
            // through past it, and a pool of max_inflight would queue them here instead.
            connections: model.mode === "shadow" ? null : pod.maxInflight,
            pipelining: 1,
            keepAliveTimeout: 30_000,
            headersTimeout: timeouts.headersTimeoutMs,
            bodyTimeout: timeouts.bodyTimeoutMs,
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

  /** Request headers to send upstream for `model`. */
  requestHeaders(
    incoming: NodeJS.Dict<string | string[]>,
    model: string,
    contentLength: number | undefined,
  ): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    for (const name in incoming) {
      if (DROP_REQUEST.has(name) || name.startsWith("x-sluice-")) continue;
      const v = incoming[name];
      if (v !== undefined) out[name] = v;
    }
    if (contentLength !== undefined) out["content-length"] = String(contentLength);
    const envName = this.#credentialEnv.get(model);
    if (envName !== undefined) {
      const secret = this.env[envName];
      if (secret) out.authorization = `Bearer ${secret}`;
    }
    return out;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#pods.values()].map((t) => t.pool.close().catch(() => t.pool.destroy())));
  }
}

/**
 * Response headers to pass back to the client, as the flat `[name, value, …]` list
 * `writeHead` takes (no intermediate object). Hop-by-hop headers are dropped.
 */
export function flatResponseHeaders(
  upstream: Record<string, string | string[] | undefined>,
  extra: Record<string, string | number>,
): string[] {
  const out: string[] = [];
  for (const name in upstream) {
    if (DROP_RESPONSE.has(name)) continue;
    const v = upstream[name];
    if (v === undefined) continue;
    if (typeof v === "string") out.push(name, v);
    else for (const each of v) out.push(name, each);
  }
  for (const name in extra) out.push(name, String(extra[name]));
  return out;
}
