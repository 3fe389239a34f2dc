/**
 * Per-key and per-tenant token budgets judged at the provider (issue 24), shared by the one-gateway
 * test (key-budget-provider.test.ts) and the two-replicas-on-Redis one (test/store/fleet-key-budgets.test.ts):
 * the config, a flood of calls from each key at once, and what the provider billed each key.
 *
 * The keys: `a` with `tpm: 20000` of its own; `t1` and `t2` of tenant `team` with `tpm: 20000`
 * shared; `b` with no budget. The model has `tpm: 200000`, far above what the keys may use, so every
 * refusal comes from a key's or the tenant's bucket and the tightest bucket on a keyed call's path
 * is the key's (or the tenant's). Each call asks for `max_tokens: 1000` and the provider generates
 * that many one-token words, so a call's estimate covers what it is billed.
 *
 * The bound, as budget-invariant.test.ts derives it from src/core/rate-budget.ts: a bucket is
 * created full when the gateway starts and refills `tpm / 60 000` a ms; a call is granted only when
 * the level covers its estimate, and its end moves the charge from the estimate to what was used.
 * So the tokens billed to one bucket's calls are at most `tpm × (1 + T / 60 000)` — T from the
 * gateway's start to the last of those calls reaching the provider — plus one call's output bound
 * for an estimate below the provider's count (issue 21's allowance).
 */
import assert from "node:assert/strict";
import { Agent, request } from "undici";
import { sha256hex } from "../helpers/index.js";
import type { BilledCall, BillingProvider } from "./billing-provider.js";

export const KEY_TPM = 20_000;
export const MODEL_TPM = 200_000;
export const MAX_TOKENS = 1000;

/** The raw config (as YAML would give it) in front of `providerUrl`; `extra` adds top-level sections. */
export function keyBudgetConfig(
  providerUrl: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const key = (id: string, more: Record<string, unknown> = {}) => ({
    id,
    sha256: sha256hex(`token-${id}`),
    ...more,
  });
  return {
    admission: { max_concurrency: 256, max_queued: 512 },
    models: [
      {
        name: "m",
        max_concurrent_requests: 16,
        reserve: 0,
        queue_limit: 256,
        queue_timeout_s: 20,
        adaptive: false,
        tpm: MODEL_TPM,
        pods: [{ url: providerUrl, max_inflight: 16 }],
      },
    ],
    auth: {
      keys: [
        key("a", { tpm: KEY_TPM }),
        key("b"),
        key("t1", { tenant: "team" }),
        key("t2", { tenant: "team" }),
      ],
    },
    tenants: { team: { tpm: KEY_TPM } },
    ...extra,
  };
}

/** What one client saw. */
export interface Answered {
  key: string;
  id: string;
  /** The gateway it was sent to. */
  url: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown> | null;
}

/**
 * Sends `perKey[key]` calls for each key at once, spread over `urls` in turn, and waits for every
 * answer. Each call's provider id is `KEY-i`.
 */
export async function flood(
  urls: readonly string[],
  perKey: Readonly<Record<string, number>>,
): Promise<Answered[]> {
  const agent = new Agent({ connections: 256 });
  try {
    const calls: Promise<Answered>[] = [];
    let n = 0;
    for (const [key, count] of Object.entries(perKey)) {
      for (let i = 0; i < count; i++) {
        const url = urls[n++ % urls.length]!;
        const id = `${key}-${i}`;
        calls.push(
          (async () => {
            const res = await request(`${url}/v1/chat/completions`, {
              method: "POST",
              dispatcher: agent,
              headers: {
                "content-type": "application/json",
                authorization: `Bearer token-${key}`,
                "x-call-id": id,
                "x-test-words": String(MAX_TOKENS),
              },
              body: JSON.stringify({
                model: "m",
                messages: [{ role: "user", content: `call ${id}` }],
                max_tokens: MAX_TOKENS,
              }),
            });
            const text = await res.body.text();
            let body: Record<string, unknown> | null = null;
            try {
              body = JSON.parse(text) as Record<string, unknown>;
            } catch {
              body = null;
            }
            return { key, id, url, status: res.statusCode, headers: res.headers, body };
          })(),
        );
      }
    }
    return await Promise.all(calls);
  } finally {
    await agent.close();
  }
}

/** The provider's bill for the calls of `keys` (by call id), and when the last of them reached it. */
export function billedTo(
  provider: BillingProvider,
  keys: readonly string[],
): { tokens: number; lastAt: number; calls: number } {
  const mine = (c: BilledCall) => keys.some((k) => c.id.startsWith(`${k}-`));
  const calls = provider.ledger().filter(mine);
  return {
    tokens: calls.reduce((sum, c) => sum + c.prompt + c.completion, 0),
    lastAt: calls.reduce((at, c) => Math.max(at, c.at), 0),
    calls: calls.length,
  };
}

/** The most a bucket of `tpm` lets its calls be billed from `startedAt` to `lastAt` (see the top). */
export function allowed(tpm: number, startedAt: number, lastAt: number): number {
  return tpm * (1 + Math.max(0, lastAt - startedAt) / 60_000) + MAX_TOKENS;
}

/** Asserts every refusal among `answers` is the bucket `budget`'s `rate_limit`, with its refill as Retry-After. */
export function assertBucketRefusals(answers: readonly Answered[], budget: string): number {
  const refused = answers.filter((a) => a.status !== 200);
  for (const a of refused) {
    assert.equal(a.status, 429, `${a.id}: ${JSON.stringify(a.body)}`);
    const error = (a.body as { error: Record<string, unknown> }).error;
    assert.equal(error.code, "rate_limit", `${a.id}: ${JSON.stringify(error)}`);
    const message = String(error.message);
    assert.ok(
      message.startsWith(`${budget}'s tokens budget (${KEY_TPM} tokens/min, `),
      `${a.id}: the refusal names the bucket: ${message}`,
    );
    // The refill time: what the bucket lacks for this call at 20 000 a minute, at most a minute
    // (and the wire's jitter, up to a fifth more), never below the 1 s floor.
    const retryMs = Number(error.retry_after_ms);
    assert.match(message, new RegExp(`retry in ${retryMs} ms$`));
    assert.ok(retryMs >= 1000 && retryMs <= 72_000, `${a.id}: retry in ${retryMs} ms`);
    assert.equal(a.headers["retry-after"], String(Math.ceil(retryMs / 1000)));
  }
  return refused.length;
}

/** Asserts an answer's rate-limit headers describe the bucket `scope` of `tpm` as the tightest. */
export function assertTightest(a: Answered, scope: string, tpm: number): void {
  assert.equal(a.status, 200);
  assert.match(String(a.headers["ratelimit-policy"]), new RegExp(`"${scope}-tokens";q=${tpm};w=60`));
  assert.match(String(a.headers["ratelimit-policy"]), new RegExp(`"lane-tokens";q=${MODEL_TPM};w=60`));
  assert.equal(a.headers["x-ratelimit-limit-tokens"], String(tpm), `${a.id}: the tightest bucket's limit`);
}
