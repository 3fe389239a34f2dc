/**
 * `sluice plan`'s arithmetic (DESIGN §6, seed 004 "Sizing, when you must pick a number"): the
 * concurrency a workload needs by Little's law, the concurrency a tokens-per-minute budget can
 * sustain at that latency, what the pods can carry, which of them binds, and a config snippet.
 * Pure: numbers in, numbers out.
 */

/** What the workload is. */
export interface PlanInput {
  /** Requests per second to carry, > 0. */
  rps: number;
  /** Mean latency of one request (the provider's thinking time included), seconds, > 0. */
  latencyS: number;
  /** Mean tokens per request (prompt + completion), > 0; with `tpm`. */
  tokensPerRequest?: number;
  /**
   * Mean reasoning ("thinking") tokens per request, ≥ 0, on top of `tokensPerRequest`. Seed 004:
   * reasoning tokens are metered as output and can multiply an answer's cost with no change in
   * request count, so a plan made at low reasoning effort is far too generous at high effort.
   */
  reasoningTokens?: number;
  /** The account's tokens per minute, > 0; with `tokensPerRequest`. */
  tpm?: number;
  /** Pods serving the model, integer ≥ 1; with `perPodMax`. */
  pods?: number;
  /** Calls one pod carries at once (its `--max-num-seqs`), integer ≥ 1; with `pods`. */
  perPodMax?: number;
}

/** Which number limits the calls in flight. */
export type Binding = "traffic" | "tokens" | "pods";

/** The suggested config for one model. */
export interface PlanConfig {
  max_concurrent_requests: number;
  queue_limit: number;
  queue_timeout_s: number;
  tpm?: number;
  pods?: { count: number; max_inflight: number };
}

export interface Plan {
  input: PlanInput;
  /** rps × latency: calls in flight the traffic needs (Little's law, L = λW). */
  concurrency: number;
  /** tpm ÷ 60 ÷ tokens per request × latency: calls in flight the token budget sustains; null without one. */
  token_ceiling: number | null;
  /** tpm ÷ 60 ÷ tokens per request: requests per second the token budget sustains; null without one. */
  token_rps: number | null;
  /** pods × per-pod max; null without them. */
  pod_capacity: number | null;
  /** The smallest of the three: what limits the calls in flight. */
  binds: Binding;
  /** Requests per second the binding limit carries at this latency (≤ `rps`). */
  sustainable_rps: number;
  config: PlanConfig;
  /** What the numbers mean, in sentences. */
  notes: string[];
}

/** sluice's default queue bound (`admission.queue_timeout_s`), seconds. */
const DEFAULT_QUEUE_TIMEOUT_S = 30;
/** A model's default queue: 4 × its limit (src/core/defaults.ts). */
const QUEUE_PER_SLOT = 4;

/** Sizes a model for `input`; the input is assumed valid (the CLI validates it). */
export function plan(input: PlanInput): Plan {
  const { rps, latencyS: L } = input;
  const concurrency = rps * L;
  const needed = Math.max(1, Math.ceil(concurrency - 1e-9));
  const metered = meteredTokens(input);
  const tokenRps = input.tpm !== undefined && metered !== undefined ? input.tpm / 60 / metered : null;
  const tokenCeiling = tokenRps === null ? null : tokenRps * L;
  const podCapacity =
    input.pods !== undefined && input.perPodMax !== undefined ? input.pods * input.perPodMax : null;
  const candidates: Array<[Binding, number]> = [["traffic", needed]];
  // A token budget sustains ⌊ceiling⌋ calls in flight; at least one, or nothing would ever run.
  if (tokenCeiling !== null) candidates.push(["tokens", Math.max(1, Math.floor(tokenCeiling + 1e-9))]);
  if (podCapacity !== null) candidates.push(["pods", podCapacity]);
  const [binds, limit] = candidates.reduce((a, b) => (b[1] < a[1] ? b : a));
  // A waiter behind a full lane waits about its position × latency ÷ limit: a queue that
  // drains within the timeout, capped at the default's 4 per slot.
  const queueTimeoutS = Math.max(DEFAULT_QUEUE_TIMEOUT_S, Math.ceil(2 * L));
  const queueLimit = Math.min(QUEUE_PER_SLOT * limit, Math.floor((limit * queueTimeoutS) / L));
  const config: PlanConfig = {
    max_concurrent_requests: limit,
    queue_limit: queueLimit,
    queue_timeout_s: queueTimeoutS,
    ...(input.tpm !== undefined ? { tpm: input.tpm } : {}),
    ...(input.pods !== undefined && input.perPodMax !== undefined
      ? { pods: { count: input.pods, max_inflight: input.perPodMax } }
      : {}),
  };
  const sustainable = Math.min(rps, limit / L);
  return {
    input,
    concurrency,
    token_ceiling: tokenCeiling,
    token_rps: tokenRps,
    pod_capacity: podCapacity,
    binds,
    sustainable_rps: sustainable,
    config,
    notes: notes(binds, input, concurrency, limit, sustainable, queueLimit, queueTimeoutS),
  };
}

/** The tokens one request costs the account: its prompt and completion, plus its reasoning (metered as output). */
export function meteredTokens(input: PlanInput): number | undefined {
  if (input.tokensPerRequest === undefined) return undefined;
  return input.tokensPerRequest + (input.reasoningTokens ?? 0);
}

function notes(
  binds: Binding,
  input: PlanInput,
  concurrency: number,
  limit: number,
  sustainable: number,
  queueLimit: number,
  queueTimeoutS: number,
): string[] {
  const out: string[] = [];
  if (binds === "traffic") {
    out.push(
      `the traffic binds: ${limit} calls in flight carry ${fmt(input.rps)} rps at ${fmt(input.latencyS)} s each`,
    );
  } else {
    const what = binds === "tokens" ? "the token budget" : "the pods";
    out.push(
      `${what} bind${binds === "pods" ? "" : "s"}: ${limit} calls in flight carry ${fmt(sustainable)} rps, not ` +
        `${fmt(input.rps)}; the rest (${fmt(input.rps - sustainable)} rps) waits in the queue and then is refused`,
    );
  }
  if (concurrency < 1) out.push("less than one call in flight on average: the limit is 1");
  const reasoning = input.reasoningTokens ?? 0;
  if (reasoning > 0 && input.tpm !== undefined && input.tokensPerRequest !== undefined) {
    const without = (input.tpm / 60 / input.tokensPerRequest) * input.latencyS;
    const withReasoning = (input.tpm / 60 / (input.tokensPerRequest + reasoning)) * input.latencyS;
    out.push(
      `reasoning tokens count as output: ${fmt(reasoning)} per request take the token ceiling from ` +
        `${fmt(without)} to ${fmt(withReasoning)} calls in flight; re-plan when the reasoning effort changes, ` +
        "and set max_completion_tokens (or default_max_tokens) to cover reasoning and answer together",
    );
  }
  out.push(
    `queue_limit ${queueLimit}: a full queue drains in about ${fmt((queueLimit * input.latencyS) / limit)} s, ` +
      `within queue_timeout_s ${queueTimeoutS}`,
  );
  out.push("latency includes the model's thinking time, the term most likely to move: measure it, re-plan");
  return out;
}

/** A number for people: up to two decimals, no trailing zeros. */
export function fmt(n: number): string {
  return Number.isInteger(n) ? `${n}` : `${Math.round(n * 100) / 100}`;
}
