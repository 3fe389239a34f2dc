/**
 * A provider account as one of a profile's pods (seed 004): the provider simulator
 * (src/sim/provider.ts) with the profile's limits per minute (real minutes: time-scale.ts says
 * why they cannot be scaled) and its service times at the time scale, its answers computed byte
 * for byte, and what it counted read back per minute: tokens charged, tokens asked, 429s.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";
import { type Provider, startProvider } from "../sim/provider.js";
import { expectedProviderAnswer } from "../sim/provider-answer.js";
import type { AccountStats } from "./stats.js";
import type { ProviderPodSpec } from "./types.js";

/**
 * Starts the account of `spec` on `port` (0: a free one), its service times at `scale`; `now` is
 * the run's clock (real ms), which its buckets and its log of calls read.
 */
export async function startProviderPod(
  spec: ProviderPodSpec,
  scale: number,
  port: number,
  now: () => number,
): Promise<Provider> {
  const { serviceMs, msPerOutputToken, ...account } = spec.account;
  return startProvider({
    ...account,
    model: spec.model,
    port,
    now,
    serviceMs: (serviceMs ?? 0) * scale,
    msPerOutputToken: (msPerOutputToken ?? 0) * scale,
  });
}

/** The exact answer the account of `spec` gives `body` on a `kind` route. */
export function providerExpected(spec: ProviderPodSpec): (kind: string, body: Buffer) => string {
  const options = { ...spec.account, model: spec.model };
  return (kind, body) => {
    if (kind !== "chat" && kind !== "completion" && kind !== "embedding") {
      throw new Error(`a provider answers chat, completion and embedding calls, not "${kind}"`);
    }
    return expectedProviderAnswer(kind, body, options);
  };
}

/**
 * What the account counted, per minute from `startMs` (the run's clock, real ms; `minuteMs` is
 * 60 000), `offerMs` being how long clients offered work.
 */
export function accountStats(
  spec: ProviderPodSpec,
  provider: Provider,
  window: { startMs: number; minuteMs: number; offerMs: number },
): AccountStats {
  const s = provider.stats();
  const { startMs, minuteMs, offerMs } = window;
  const minuteOf = (at: number) => Math.max(0, Math.floor((at - startMs) / minuteMs));
  const offerMinutes = Math.max(1, Math.ceil(offerMs / minuteMs));
  const last = Math.max(
    offerMinutes - 1,
    ...s.log.map((e) => minuteOf(e.at)),
    ...s.throttledLog.map((e) => minuteOf(e.at)),
  );
  const served = new Array<number>(last + 1).fill(0);
  const asked = new Array<number>(last + 1).fill(0);
  let askedWhileOffered = 0;
  // Calls before the start (the warm-up, `warmAccount`) are not the run's.
  const log = s.log.filter((e) => e.at >= startMs);
  const throttledLog = s.throttledLog.filter((e) => e.at >= startMs);
  for (const e of [...log, ...throttledLog]) {
    asked[minuteOf(e.at)]! += e.tokens;
    if (e.at - startMs < offerMs) askedWhileOffered += e.tokens;
  }
  for (const e of log) served[minuteOf(e.at)]! += e.tokens;
  // Whole minutes of offering after the first: the steady state, once the initial bucket is spent.
  const later = served.slice(1, Math.floor(offerMs / minuteMs));
  const tpm = spec.account.tpm ?? null;
  return {
    model: spec.model,
    url: provider.url,
    tpm,
    rpm: spec.account.rpm ?? null,
    served: s.served,
    throttled: s.throttled,
    tokens_served: s.tokensServed,
    tokens_per_minute: served,
    tokens_asked_per_minute: asked,
    first_minute_tokens: served[0]!,
    peak_minute_tokens: later.length === 0 ? null : Math.max(...later),
    mean_minute_tokens:
      later.length === 0 ? null : Math.round(later.reduce((n, x) => n + x, 0) / later.length),
    sustained_asked_per_minute: Math.round(
      ((askedWhileOffered - (tpm ?? 0)) * minuteMs) / Math.max(1, offerMs),
    ),
  };
}

/** The warm-up call: a few tokens (a short prompt, one output token). */
const WARM_BODY = JSON.stringify({ messages: [{ role: "user", content: "warm-up" }], max_tokens: 1 });
/** Tokens the warm-up call costs at most (prompt + message overhead + output, with a margin). */
const WARM_TOKENS = 20;

/**
 * Sends one tiny call of `spec`'s model to `base` (a gateway, or the provider itself) and waits
 * until the account's bucket is full again, before the run's clock starts. Why: a fresh gateway's
 * first call to a pod is slow (a new connection, code not yet compiled: 100–400 ms measured here),
 * and while that call is on its way the provider's bucket is still full and refills nothing, but
 * sluice's, which already took the call, refills: that refill, up to tpm × the delay, is credit the
 * provider never had, and at tpm 20 000 a 150 ms first call is 50 tokens, enough for one small call
 * to meet a provider 429 once both buckets run dry. After a warm-up both buckets are full again,
 * so they start in step, and the first real call takes the warm path (a few ms). Throws when the
 * warm-up is not answered 200.
 */
export async function warmAccount(base: string, spec: ProviderPodSpec): Promise<void> {
  const res = await request(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: WARM_BODY.replace("{", `{"model":${JSON.stringify(spec.model)},`),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) {
    throw new Error(
      `the warm-up call to ${spec.model} at ${base} was answered ${res.statusCode}: ${text.slice(0, 200)}`,
    );
  }
  const { tpm, rpm } = spec.account;
  // Twice the refill time of the warm-up's tokens and request: both sides' buckets are full again.
  const refillMs = (used: number, perMinute: number | undefined) =>
    perMinute === undefined ? 0 : Math.ceil((2 * used * 60_000) / perMinute);
  await sleep(Math.max(refillMs(WARM_TOKENS, tpm), refillMs(1, rpm)));
}
