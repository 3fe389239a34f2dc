/**
 * Seed 004: an autoscaler that reacts to latency takes the gateway from 1 to 10 replicas, each
 * with the provider account's concurrency limit in its config. Throttling and queueing raise the
 * clients' latency, so it adds replicas, and each brings its own limit: ten replicas with "8 at
 * once" each put up to 80 calls on an account that carries 8, and the provider answers 429 ("the
 * system scales into the wall"). With the Redis store (fleet mode, docs/fleet.md) the replicas
 * count one budget, so the provider never sees more than the limit however many there are. Both
 * runs grow the same way; only the store differs.
 *
 * Which numbers are the seed's and which are this profile's own assumptions is listed in
 * docs/load.md ("`autoscale`").
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import type { AutoscaleSpec, LoadProfile, RetryPolicy } from "../types.js";

/** The Redis the fleet run shares; `REDIS_URL` as the store's tests read it. */
export const AUTOSCALE_REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/**
 * Calls the provider account runs at once, one more is a 429; also each replica's limit
 * (assumption: seed 004's instances each had 40 and the account's limit is not given; 8 keeps ten
 * replicas on worker threads within a 2-core machine).
 */
const LIMIT = 8;
/**
 * The autoscaler (assumption: seed 004 says only that it reacts to queue depth and latency): it
 * looks every 6 s and adds one replica while the clients' mean time to an answer is above 4 s, two
 * calls' worth of the provider's 2 s.
 */
export const AUTOSCALER: AutoscaleSpec = { from: 1, everyMs: 6_000, latencyMs: 4_000 };
/**
 * The clients' SDK: two retries after the answer's `Retry-After` (the OpenAI SDK's default). Seed
 * 004: "Throttling raises per-request latency (calls now wait through backoff)" — the latency
 * the autoscaler reacts to.
 */
const SDK_RETRIES: RetryPolicy = {
  maxAttempts: 3,
  sluiceRefusals: true,
  upstreamFailures: true,
  backoff: { baseMs: 500, maxMs: 8_000 },
};
/** Seed seconds a call may wait in a replica's queue: a few times what the account's 8 take to turn over. */
const QUEUE_TIMEOUT_S = 30;

/** No Redis at the store's URL: the fleet run cannot happen, and says so. */
export class RedisUnavailableError extends Error {
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(
      `the fleet run needs Redis and none answers at ${url} (${reason}); start redis-server or set REDIS_URL`,
    );
    this.name = "RedisUnavailableError";
  }
}

/** Throws `RedisUnavailableError` unless a Redis answers PING at `url` within a second. */
export async function requireRedis(url = AUTOSCALE_REDIS_URL): Promise<void> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.ping();
  } catch (e) {
    throw new RedisUnavailableError(url, (e as Error).message);
  } finally {
    client.disconnect();
  }
}

/**
 * Seed 004 growing to `replicas` gateways over `durationMs` of seed time. `clients` closed loops
 * offer more than the account carries (6 × the limit by default), so the latency stays above the
 * autoscaler's target whatever the replica count: adding replicas cannot add to the account.
 */
export function autoscaleProfile(
  replicas = 10,
  durationMs = 90_000,
  clients = 6 * LIMIT,
  autoscaler: AutoscaleSpec = AUTOSCALER,
): LoadProfile {
  const model = (urls: Readonly<Record<string, string[]>>, s: (n: number) => number) => ({
    name: "gpt-sim",
    max_concurrent_requests: LIMIT,
    reserve: 0,
    queue_limit: 8 * LIMIT,
    queue_timeout_s: s(QUEUE_TIMEOUT_S),
    // The account's limit as written in every replica's config; no width adaptation, so the
    // contrast is the limits themselves (a 429 would otherwise narrow each replica's width).
    adaptive: false,
    pods: (urls["gpt-sim"] ?? []).map((url) => ({ url, max_inflight: LIMIT })),
  });
  const admission = { max_concurrency: 256, max_queued: 256 };
  return {
    name: "autoscale",
    seed: "004",
    title: `replicas 1 → ${replicas} behind one provider account: per-process limits multiply, a shared store does not`,
    story: [
      `a provider account that runs ${LIMIT} calls at once and answers 429 past that (2 s each)`,
      `an autoscaler grows the gateway from ${autoscaler.from} to ${replicas} replicas (each a worker thread with its own store, configured with the account's ${LIMIT}): every ${autoscaler.everyMs / 1000} s, one more while the clients' mean time to an answer is above ${autoscaler.latencyMs / 1000} s`,
      `${clients} clients in closed loops (1 s think, the SDK's two retries) take the replicas in turn for ${durationMs / 1000} s: per-process stores (store: memory) against one Redis store (${AUTOSCALE_REDIS_URL}, one fleet prefix)`,
    ],
    defaultScale: 0.1,
    pods: [
      {
        model: "gpt-sim",
        options: {
          maxNumSeqs: LIMIT,
          maxWaiting: 0,
          overflow: "429",
          serviceMs: 2_000,
          defaultOutputTokens: 32,
          tokensPerSecond: 0,
          seed: 4,
        },
      },
    ],
    replicas,
    autoscale: autoscaler,
    labels: [
      `${autoscaler.from} → ${replicas} replicas, Redis store`,
      `${autoscaler.from} → ${replicas} replicas, per process`,
    ],
    preflight: () => requireRedis(),
    config: (urls, s) => {
      // Placeholder URLs (the receipt's settings): a fixed prefix, so the hash is the same each run.
      const placeholder = Object.values(urls).some((l) => l.some((u) => u.endsWith(".invalid")));
      return {
        listen: "127.0.0.1:0",
        store: AUTOSCALE_REDIS_URL,
        fleet: { prefix: placeholder ? "sluice-load:autoscale" : `sluice-load:autoscale:${randomUUID()}` },
        admission,
        models: [model(urls, s)],
      };
    },
    directConfig: (urls, s) => ({ listen: "127.0.0.1:0", admission, models: [model(urls, s)] }),
    groups: [
      {
        name: "clients",
        request: { kind: "chat", model: "gpt-sim" },
        arrival: { kind: "closed", clients, thinkMs: 1_000 },
        retry: { sluice: SDK_RETRIES, direct: SDK_RETRIES },
      },
    ],
    durationMs,
    drainMs: 2 * QUEUE_TIMEOUT_S * 1000,
    checks(fleet) {
      return [
        {
          name: "calls at the provider at once with the Redis store",
          target: `≤ ${LIMIT} (the account's limit)`,
          value: `${fleet.upstream_max_inflight}`,
          met: fleet.upstream_max_inflight <= LIMIT,
        },
        {
          name: "provider 429s with the Redis store",
          target: "0",
          value: `${fleet.throttles}`,
          met: fleet.throttles === 0,
        },
        {
          name: "the fleet uses the account (calls completed)",
          target: "> 0",
          value: `${fleet.completed}`,
          met: fleet.completed > 0,
        },
      ];
    },
    // The provider answers a call past its limit with 429 at once, so what it runs at once never
    // exceeds the limit; what shows the replicas' limits multiplying is its 429s.
    directChecks(perProcess) {
      return [
        {
          name: "provider 429s with per-process limits (the replicas together send more than the account's limit)",
          target: "> 0",
          value: `${perProcess.throttles}`,
          met: perProcess.throttles > 0,
        },
      ];
    },
  };
}

/** Seed 004 at its shape: one replica growing to ten, over a minute and a half. */
export const autoscale: LoadProfile = autoscaleProfile();
