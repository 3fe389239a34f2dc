/**
 * A hosted provider's account, simulated (DESIGN §6, seed 004): `sluice sim --profile provider`
 * with account limits. It meters what a provider meters — requests per minute, tokens per minute
 * (token buckets of one minute's worth, refilled continuously, charged each call's real usage when
 * it arrives) and calls in flight — and answers a call past any of them with 429 and the headers
 * providers send: `retry-after` / `retry-after-ms` (until this call would fit), and OpenAI's
 * `x-ratelimit-limit-*`, `-remaining-*`, `-reset-*` (`requests` and `tokens`; a reset is the time
 * until the bucket is full again, written like `1.5s` or `6m0s`). Answers that pass carry the same
 * headers. Bodies are OpenAI-shaped (JSON, SSE, embeddings) with `usage`. Prompt tokens are
 * counted as a hosted provider counts them, with a real tokenizer (the gateway's, `src/estimate`).
 *
 * Its clock can be injected (`now`), so a gateway test on a ManualClock sees the provider's
 * buckets refill on the same time; service times use real timers.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { RateBudget } from "../core/rate-budget.js";
import { refillMs } from "../core/refill.js";
import { errorBody, SimBadRequestError } from "./openai.js";
import {
  type ProviderAnswerOptions,
  type ProviderCall,
  type ProviderKind,
  providerAnswerBody,
  readProviderCall,
} from "./provider-answer.js";

/** Options of {@link startProvider}. */
export interface ProviderOptions extends ProviderAnswerOptions {
  /** Port to listen on; 0 picks a free one. **Default:** 0. */
  port?: number;
  /** **Default:** `"127.0.0.1"`. */
  host?: string;
  /** Tokens per minute of the account; undefined = unmetered. */
  tpm?: number;
  /** Requests per minute of the account; undefined = unmetered. */
  rpm?: number;
  /** Calls in flight at once; undefined = unbounded. */
  maxInflight?: number;
  /** Base service time in ms before the answer. **Default:** 0. */
  serviceMs?: number;
  /** Added service time per output token, in ms. **Default:** 0. */
  msPerOutputToken?: number;
  /** Time source in ms for the buckets. **Default:** `performance.now`. */
  now?: () => number;
}

/** What a provider has seen, for tests and the bench. */
export interface ProviderStats {
  served: number;
  /** 429s by the limit that said no. */
  throttled: { tokens: number; requests: number; inflight: number };
  /** Tokens charged (prompt + completion) of the calls served. */
  tokensServed: number;
  maxInflightSeen: number;
  /** Every call served: when it arrived (clock ms) and the tokens it was charged. */
  log: { at: number; tokens: number }[];
  /** Every call answered 429: when it arrived (clock ms), the tokens it would have been charged, the limit that said no. */
  throttledLog: { at: number; tokens: number; why: keyof ProviderStats["throttled"] }[];
}

export interface Provider {
  readonly url: string;
  readonly port: number;
  stats(): ProviderStats;
  close(): Promise<void>;
}

const ROUTES: Record<string, ProviderKind> = {
  "/v1/chat/completions": "chat",
  "/v1/completions": "completion",
  "/v1/embeddings": "embedding",
};

/** OpenAI's duration format for a reset: `20ms`, `1.5s`, `6m0s`. */
export function resetText(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const s = Math.ceil(ms / 100) / 10;
  if (s < 60) return `${s}s`;
  return `${Math.floor(s / 60)}m${Math.round(s % 60)}s`;
}

/** Starts a provider simulator; resolves once it listens. */
export async function startProvider(options: ProviderOptions = {}): Promise<Provider> {
  const perf = globalThis.performance;
  const now = options.now ?? (() => perf.now());
  const t0 = now();
  const tokens = options.tpm === undefined ? null : new RateBudget("tokens", "tokens", options.tpm, t0);
  const requests = options.rpm === undefined ? null : new RateBudget("requests", "requests", options.rpm, t0);
  const stats: ProviderStats = {
    served: 0,
    throttled: { tokens: 0, requests: 0, inflight: 0 },
    tokensServed: 0,
    maxInflightSeen: 0,
    log: [],
    throttledLog: [],
  };
  let inflight = 0;
  /** Answers not yet sent: cleared by close(), so a closed provider keeps no timer. */
  const timers = new Set<NodeJS.Timeout>();

  /** The account's headers now (OpenAI's names). */
  const limitHeaders = (at: number): Record<string, string> => {
    const h: Record<string, string> = {};
    for (const [b, kind] of [
      [requests, "requests"],
      [tokens, "tokens"],
    ] as const) {
      if (b === null) continue;
      const level = b.levelAt(at);
      h[`x-ratelimit-limit-${kind}`] = String(b.perMinute);
      h[`x-ratelimit-remaining-${kind}`] = String(Math.max(0, Math.floor(level)));
      h[`x-ratelimit-reset-${kind}`] = resetText(refillMs(b.perMinute - level, b.perMinute));
    }
    return h;
  };

  const throttle = (
    res: ServerResponse,
    at: number,
    why: keyof ProviderStats["throttled"],
    waitMs: number,
    charge: number,
  ) => {
    stats.throttled[why]++;
    stats.throttledLog.push({ at, tokens: charge, why });
    const ms = Math.max(1, Math.ceil(waitMs));
    const body = errorBody(
      `Rate limit reached for ${why} on this account; please try again in ${resetText(ms)}`,
      "requests",
      "rate_limit_exceeded",
    );
    res.writeHead(429, {
      "content-type": "application/json",
      "retry-after": String(Math.ceil(ms / 1000)),
      "retry-after-ms": String(ms),
      ...limitHeaders(at),
    });
    res.end(body);
  };

  const answer = (
    res: ServerResponse,
    kind: ProviderKind,
    call: ProviderCall,
    headers: Record<string, string>,
  ) => {
    const streamed = kind !== "embedding" && call.request.stream;
    res.writeHead(
      200,
      streamed
        ? { "content-type": "text/event-stream", "cache-control": "no-cache", ...headers }
        : { "content-type": "application/json", ...headers },
    );
    res.end(providerAnswerBody(kind, call, options));
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const path = (req.url ?? "/").split("?")[0]!;
    const kind = ROUTES[path];
    if (kind === undefined || req.method !== "POST") {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(errorBody(`no route ${req.method} ${path}`, "invalid_request_error"));
      return;
    }
    let call: ProviderCall;
    try {
      call = readProviderCall(kind, body, options);
    } catch (error) {
      const param = error instanceof SimBadRequestError ? error.param : null;
      res.writeHead(400, { "content-type": "application/json" });
      res.end(errorBody((error as Error).message, "invalid_request_error", null, param));
      return;
    }
    const { charge, outputTokens: n } = call;
    const at = now();
    // Requests first, then tokens, then concurrency: the order OpenAI's headers suggest.
    if (requests !== null && !requests.hasRoom(1, 1, at))
      return throttle(res, at, "requests", requests.readyAt(1) - at, charge);
    if (tokens !== null && !tokens.hasRoom(1, charge, at)) {
      const ready = tokens.readyAt(charge);
      return throttle(res, at, "tokens", Number.isFinite(ready) ? ready - at : 60_000, charge);
    }
    if (options.maxInflight !== undefined && inflight >= options.maxInflight)
      return throttle(res, at, "inflight", 1000, charge);
    requests?.take(1, at);
    tokens?.take(charge, at);
    inflight++;
    stats.maxInflightSeen = Math.max(stats.maxInflightSeen, inflight);
    stats.served++;
    stats.tokensServed += charge;
    stats.log.push({ at, tokens: charge });
    const headers = limitHeaders(at);
    const delay = (options.serviceMs ?? 0) + n * (options.msPerOutputToken ?? 0);
    const finish = () => {
      inflight--;
      if (!res.destroyed) answer(res, kind, call, headers);
    };
    if (delay <= 0) finish();
    else {
      const timer = setTimeout(() => {
        timers.delete(timer);
        finish();
      }, delay);
      timers.add(timer);
    }
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => onRequest(req, res, Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${options.host ?? "127.0.0.1"}:${port}`,
    port,
    stats: () => ({
      ...stats,
      throttled: { ...stats.throttled },
      log: [...stats.log],
      throttledLog: [...stats.throttledLog],
    }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
