/**
 * Seed 004, "concurrency is not the quota": a provider meters tokens per minute, and calls differ
 * in size by orders of magnitude — a short classification and a document summary take one
 * request each. Small and large calls are offered to one account at about three times the tokens
 * per minute it allows. Straight to the provider, clients meet its 429s and retry them (the SDK's
 * two retries, after its `retry-after`); the large calls, which need a fuller bucket, lose most.
 * Through sluice, the account's `tpm` paces the calls by their tokens — each reserves its
 * estimate at the grant (the prompt counted with the tokenizer the provider uses, plus
 * `max_tokens`) and is reconciled with the answer's `usage` — so the provider never has to say no;
 * what the account cannot carry waits in sluice's queue and, past its bound, is refused by sluice.
 * Runs in real time: a token bucket's minute cannot be scaled (time-scale.ts).
 */

import type { LoadProfile, RetryPolicy } from "../types.js";

/** The account's tokens per minute. */
const TPM = 60_000;

/** A classification: a short prompt, a short answer (a label and a line of why). */
const SMALL = { promptWords: 150, maxTokens: 100 };
/** A document summary: ~25 × the small call's tokens. */
const LARGE = { promptWords: 4_000, maxTokens: 1_000 };

/** The OpenAI SDK's default: two retries, after the answer's `retry-after`, else 0.5 s doubling (up to 8 s) with jitter. */
const SDK_RETRIES: RetryPolicy = {
  maxAttempts: 3,
  sluiceRefusals: true,
  upstreamFailures: true,
  backoff: { baseMs: 500, maxMs: 8_000 },
};

export interface ProviderTokensOptions {
  /** The account's tokens per minute (the provider's, and `accounts.provider.tpm` through sluice). **Default:** `60000`. */
  tpm?: number;
  /** Ms of offering. **Default:** two minutes: the first spends the bucket's initial minute's worth, the second shows the steady state. */
  durationMs?: number;
  /** Small calls per second. **Default:** `4`. */
  smallPerSecond?: number;
  /** Large calls per second. **Default:** `0.5` (with the small ones, about 3 × the account's tokens per minute). */
  largePerSecond?: number;
  /** Seconds a call may wait in sluice's queue. **Default:** `30`. */
  queueTimeoutS?: number;
  /** Clients retry twice after `retry-after` (the SDK's default); false: one attempt each. **Default:** `true`. */
  retries?: boolean;
  /** The provider's time to answer: ms before it, and ms per output token. **Default:** `{ ms: 500, perOutputTokenMs: 10 }`. */
  service?: { ms: number; perOutputTokenMs: number };
}

/** Seed 004's token ceiling: small and large calls against a tokens/minute account, in real time. */
export function providerTokensProfile(o: ProviderTokensOptions = {}): LoadProfile {
  const tpm = o.tpm ?? TPM;
  const durationMs = o.durationMs ?? 120_000;
  const smallPerSecond = o.smallPerSecond ?? 4;
  const largePerSecond = o.largePerSecond ?? 0.5;
  const queueTimeoutS = o.queueTimeoutS ?? 30;
  const service = o.service ?? { ms: 500, perOutputTokenMs: 10 };
  const retry = o.retries === false ? undefined : { sluice: SDK_RETRIES, direct: SDK_RETRIES };
  return {
    name: "provider-tokens",
    seed: "004",
    title: "small and large calls against a tokens/minute account: never a provider 429 through sluice",
    story: [
      `a provider account of ${tpm.toLocaleString("en")} tokens per minute: a one-minute token bucket, charged prompt (tokenizer) + completion on arrival, 429 with retry-after past it`,
      `small calls (${SMALL.promptWords} words, max_tokens ${SMALL.maxTokens}) at ${smallPerSecond}/s and large ones (${LARGE.promptWords} words, max_tokens ${LARGE.maxTokens}) at ${largePerSecond}/s, Poisson, for ${durationMs / 1000} s; answers use 60 % of max_tokens`,
      `clients ${retry === undefined ? "never retry" : "retry twice after retry-after (the SDK's default)"}; through sluice: accounts.provider.tpm ${tpm.toLocaleString("en")} (the account's own number), queue bound ${queueTimeoutS} s`,
      "real time: a token bucket holds a real minute's worth, so this profile's minute is not scaled",
    ],
    defaultScale: 1,
    pods: [
      {
        kind: "provider",
        model: "gpt-sim",
        account: {
          tpm,
          serviceMs: service.ms,
          msPerOutputToken: service.perOutputTokenMs,
          completionRatio: 0.6,
        },
      },
    ],
    config: (urls, s) => ({
      listen: "127.0.0.1:0",
      admission: { max_concurrency: 256, max_queued: 1024 },
      models: [
        {
          name: "gpt-sim",
          max_concurrent_requests: 64,
          reserve: 0,
          queue_limit: 512,
          queue_timeout_s: s(queueTimeoutS),
          // No width adaptation: the bound under test is the account's tokens, not a pod's width.
          adaptive: false,
          pods: (urls["gpt-sim"] ?? []).map((url) => ({ url, max_inflight: 64 })),
        },
      ],
      accounts: { provider: { tpm, models: ["gpt-sim"] } },
    }),
    groups: [
      {
        name: "small",
        request: {
          kind: "chat",
          model: "gpt-sim",
          maxTokens: SMALL.maxTokens,
          promptWords: SMALL.promptWords,
        },
        arrival: { kind: "open", perSecond: smallPerSecond },
        ...(retry === undefined ? {} : { retry }),
      },
      {
        name: "large",
        request: {
          kind: "chat",
          model: "gpt-sim",
          maxTokens: LARGE.maxTokens,
          promptWords: LARGE.promptWords,
        },
        arrival: { kind: "open", perSecond: largePerSecond },
        ...(retry === undefined ? {} : { retry }),
      },
    ],
    durationMs,
    // The first minute spends the bucket's initial minute's worth: utilization is measured after it.
    warmupMs: Math.min(60_000, durationMs / 2),
    drainMs: 2 * queueTimeoutS * 1000,
    checks(sluice) {
      const account = sluice.accounts[0];
      return [
        {
          name: "provider 429s through sluice",
          target: "0",
          value: `${sluice.throttles}`,
          met: sluice.throttles === 0,
        },
        {
          name: "tokens per minute sent to the provider through sluice, sustained: (asked − tpm) ÷ minutes offered",
          target: `≤ ${tpm} (the account's tpm)`,
          value: `${account?.sustained_asked_per_minute ?? "no account"}`,
          met: account !== undefined && account.sustained_asked_per_minute <= tpm,
        },
        {
          name: "calls completed through sluice",
          target: "> 0",
          value: `${sluice.completed}`,
          met: sluice.completed > 0,
        },
      ];
    },
    directChecks(direct) {
      const account = direct.accounts[0];
      return [
        {
          name: "provider 429s straight to the provider",
          target: "> 0",
          value: `${direct.throttles}`,
          met: direct.throttles > 0,
        },
        {
          name: "tokens per minute asked of the provider straight, sustained: (asked − tpm) ÷ minutes offered",
          target: `> ${tpm} (more than the account allows)`,
          value: `${account?.sustained_asked_per_minute ?? "no account"}`,
          met: account !== undefined && account.sustained_asked_per_minute > tpm,
        },
      ];
    },
  };
}

/** Seed 004's token ceiling at its own size: two minutes of small and large calls. */
export const providerTokens: LoadProfile = providerTokensProfile();
