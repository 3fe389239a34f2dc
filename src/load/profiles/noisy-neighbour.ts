/**
 * Issue 24's proof, on seed 002's mechanism: one gate (a lane of a fixed number of pod slots and
 * a model token bucket) shared by two tenants of the same class, each with its own client key.
 * Tenant A floods at ten times its share, tenant B offers half of its own. Straight to the pods
 * B's calls queue behind A's in the server's FIFO and starve; through sluice, weighted fair
 * queuing between the keys of a class serves B as if A were not there, and A takes everything B
 * leaves. Three runs: B alone through sluice (the reference for B's waits), A + B through sluice,
 * A + B straight to the pods. The checks are in noisy-neighbour-checks.ts.
 */
import { createHash, randomUUID } from "node:crypto";
import type { ClientGroup, LoadProfile } from "../types.js";
import { AUTOSCALE_REDIS_URL, requireRedis } from "./autoscale.js";
import { aloneChecks, directChecks, sluiceChecks } from "./noisy-neighbour-checks.js";

/** A call's answer: `max_tokens` asked, tokens the pod answers (the reservation is reconciled down to it). */
const MAX_TOKENS = 64;
const ANSWER_TOKENS = 32;

/** The tenants: their client keys' ids, tokens (the gateway knows their SHA-256) and `x-sim-tenant`. */
export const TENANT_A = { id: "tenant-a", token: "noisy-neighbour-tenant-a" } as const;
export const TENANT_B = { id: "tenant-b", token: "noisy-neighbour-tenant-b" } as const;

export interface NoisyNeighbourOptions {
  /** The lane: slots of the one pod, all of them sluice's lane. **Default:** `32`. */
  slots?: number;
  /** Mean service time of a call, seed ms (lognormal, σ 0.25: the sim's default jitter). **Default:** `4000`. */
  serviceMs?: number;
  /** Seed ms of offering. **Default:** `120000`. */
  durationMs?: number;
  /** Seed ms before the lane's utilization is measured (A's flood fills it first). **Default:** `20000`, at most a quarter of `durationMs`. */
  warmupMs?: number;
  /**
   * `auth.keys[].weight` of A and B; each tenant's share of the lane is its weight ÷ the sum.
   * `null` leaves the key out (every key then weighs 1; a gateway before issue 24 refuses the
   * key). **Default:** `{ a: 1, b: 1 }`.
   */
  weights?: { a: number; b: number } | null;
  /** A's offered rate ÷ its share. **Default:** `10`. */
  floodFactor?: number;
  /** B's offered rate ÷ its share. **Default:** `0.5`. */
  quietFactor?: number;
  /** Seed seconds a call may wait in sluice's queue. **Default:** `10`. */
  queueTimeoutS?: number;
  /** The clients' own bound on a call, seed ms. **Default:** `30000`. */
  clientTimeoutMs?: number;
  /**
   * Gateways each run through sluice starts, the clients taking them in turn; with more than one
   * they share one Redis store (`REDIS_URL`, default `redis://127.0.0.1:6379`; a fresh fleet
   * prefix per run), so the lane, the bucket and the fair queue are the fleet's. **Default:** `1`.
   */
  replicas?: number;
  /**
   * With several replicas, the one (0-based) all of B's clients take, while A's take every
   * replica in turn: issue 24's fleet case, where equal shares per replica gave B a quarter of
   * the lane instead of half (docs/fleet.md#fairness-across-replicas). `null`: B's clients take
   * the replicas in turn too. **Default:** the last replica.
   */
  bReplica?: number | null;
}

/** A generous prompt count for a call's one-line message (its estimate: tokenizer + chat framing). */
const PROMPT_TOKENS = 24;

/** Two tenants on one lane and one token bucket: A floods, B's share must hold. */
export function noisyNeighbourProfile(o: NoisyNeighbourOptions = {}): LoadProfile {
  const slots = o.slots ?? 32;
  const serviceMs = o.serviceMs ?? 4_000;
  /** Calls the lane carries per seed second when full. */
  const lanePerSecond = slots / (serviceMs / 1000);
  const durationMs = o.durationMs ?? 120_000;
  const warmupMs = o.warmupMs ?? Math.min(20_000, durationMs / 4);
  const weights = o.weights === undefined ? { a: 1, b: 1 } : o.weights;
  const floodFactor = o.floodFactor ?? 10;
  const quietFactor = o.quietFactor ?? 0.5;
  const queueTimeoutS = o.queueTimeoutS ?? 10;
  const clientTimeoutMs = o.clientTimeoutMs ?? 30_000;
  const replicas = o.replicas ?? 1;
  const fleet = replicas > 1;
  const bReplica = fleet ? (o.bReplica === undefined ? replicas - 1 : o.bReplica) : null;
  const w = weights ?? { a: 1, b: 1 };
  const shareA = w.a / (w.a + w.b);
  const shareB = w.b / (w.a + w.b);
  const aPerSecond = floodFactor * shareA * lanePerSecond;
  const bPerSecond = quietFactor * shareB * lanePerSecond;
  // Sized at 1.5 × the lane's full rate: the bucket is shared and charged, and the lane is what binds.
  const tpmPerSeedMinute = Math.round(1.5 * lanePerSecond * 60 * (PROMPT_TOKENS + MAX_TOKENS));
  const tenantGroup = (
    name: string,
    tenant: { id: string; token: string },
    perSecond: number,
    replica: number | null = null,
  ): ClientGroup => ({
    name,
    request: { kind: "chat", model: "shared", maxTokens: MAX_TOKENS },
    arrival: { kind: "open", perSecond },
    timeoutMs: clientTimeoutMs,
    tenant,
    // Distinct calls of one length: named, so the gateway's retry pacing never holds one for a retry.
    idempotencyKeys: true,
    ...(replica === null ? {} : { replica }),
  });
  const key = (tenant: { id: string; token: string }, weight: number | undefined) => ({
    id: tenant.id,
    sha256: createHash("sha256").update(tenant.token).digest("hex"),
    ...(weight === undefined ? {} : { weight }),
  });
  return {
    name: fleet ? "noisy-neighbour-fleet" : "noisy-neighbour",
    seed: "002",
    title: `two tenants of one class share a lane: one floods, the other keeps its share through sluice${fleet ? ` — ${replicas} gateway replicas on one Redis store` : ""}`,
    story: [
      `one pod of ${slots} slots (${serviceMs / 1000} s a call, lognormal σ 0.25), queueing what it cannot run (vLLM's unbounded waiting queue)`,
      `tenant A (key ${TENANT_A.id}) offers ${aPerSecond}/s = ${floodFactor} × its share; tenant B (key ${TENANT_B.id}) ${bPerSecond}/s = ${quietFactor} × its share; the lane carries ${lanePerSecond}/s; Poisson, one attempt, client timeout ${clientTimeoutMs / 1000} s`,
      `through sluice: one lane of ${slots}, tpm ${tpmPerSeedMinute.toLocaleString("en")} a seed minute (1.5 × the lane's full rate: the lane binds), keys ${weights === null ? "without weight (every key the same)" : `weighted ${w.a} (A) and ${w.b} (B)`}, queue bound ${queueTimeoutS} s${fleet ? `; ${replicas} gateway replicas on one Redis store (${AUTOSCALE_REDIS_URL}), ${bReplica === null ? "the clients taking them in turn" : `A's clients taking them in turn, B's all replica ${bReplica + 1}`}` : ""}`,
      "three runs: B alone through sluice (its waits without A), A + B through sluice, A + B straight to the pod",
    ],
    // A's flood is 5 × the lane: 80 calls a real second at 0.5, which a gateway thread answers
    // at once on a busy 2-core machine; at 0.2 (200 a second) its refusals waited on the loop.
    defaultScale: 0.5,
    pods: [
      {
        model: "shared",
        options: {
          maxNumSeqs: slots,
          serviceMs,
          jitterSigma: 0.25,
          defaultOutputTokens: ANSWER_TOKENS,
          tokensPerSecond: 0,
          seed: 24,
        },
      },
    ],
    ...(fleet ? { replicas, preflight: () => requireRedis() } : {}),
    config: (urls, s) => ({
      listen: "127.0.0.1:0",
      ...(fleet ? fleetStore(urls) : {}),
      admission: { max_concurrency: 4096, max_queued: 8192 },
      auth: { keys: [key(TENANT_A, weights?.a), key(TENANT_B, weights?.b)] },
      models: [
        {
          name: "shared",
          max_concurrent_requests: slots,
          reserve: 0,
          queue_limit: 4096,
          queue_timeout_s: s(queueTimeoutS),
          // A token bucket holds a real minute: the seed minute's tokens at this scale (s(60) real seconds).
          tpm: Math.round((tpmPerSeedMinute * 60) / s(60)),
          default_max_tokens: MAX_TOKENS,
          // The bound under test is the lane's slots, not a pod's adapted width.
          adaptive: false,
          pods: (urls.shared ?? []).map((url) => ({ url, max_inflight: slots })),
        },
      ],
    }),
    alone: { label: "B alone, through sluice", groups: ["B"] },
    groups: [tenantGroup("A", TENANT_A, aPerSecond), tenantGroup("B", TENANT_B, bPerSecond, bReplica)],
    durationMs,
    warmupMs,
    drainMs: clientTimeoutMs + 2 * serviceMs,
    checks: (sluice) => sluiceChecks(sluice, TENANT_B.id),
    directChecks: (direct) => directChecks(direct, TENANT_B.id),
    aloneChecks: (alone, sluice) => aloneChecks(alone, sluice, TENANT_B.id),
  };
}

/** One Redis store for the replicas: a fixed prefix for the receipt's settings (placeholder URLs), a fresh one per run. */
function fleetStore(urls: Readonly<Record<string, string[]>>): Record<string, unknown> {
  const placeholder = Object.values(urls).some((l) => l.some((u) => u.endsWith(".invalid")));
  const prefix = "sluice-load:noisy-neighbour";
  return {
    store: AUTOSCALE_REDIS_URL,
    fleet: { prefix: placeholder ? prefix : `${prefix}:${randomUUID()}` },
  };
}

/** Two minutes of A's flood beside B's half share. */
export const noisyNeighbour: LoadProfile = noisyNeighbourProfile();

/** The same through two gateway replicas sharing one Redis store (issue 24: "on two replicas"). */
export const noisyNeighbourFleet: LoadProfile = noisyNeighbourProfile({ replicas: 2 });
