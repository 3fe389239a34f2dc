/**
 * Seed 002 (#209): three review panels, each fanning five finder calls out at once (up to 15),
 * beside an operator's chat, all on one model lane. Straight to the server everything queues
 * there, the calls behind the first rounds wait past the SDK's 120 s timeout, and its retries
 * re-send them: the operator's turns time out with the panels'. Through sluice the lane admits
 * what the server runs, keeps the last slot for the operator (the interactive reserve), queues a
 * bounded amount and tells the rest "not now" at once.
 *
 * Which numbers are the seed's and which are this profile's own assumptions is listed in
 * docs/load.md ("`panel-burst`"); the constants below say it too.
 */
import type { LoadProfile, RetryPolicy } from "../types.js";
import { fmtMs, fmtPct } from "./format.js";

/** Review panels at once (seed 002: `max_concurrent_panels` default 3). */
export const PANELS = 3;
/** Finder calls each panel runs at once (seed 002: `code-review-structural.yaml` `max_concurrency: 5`). */
export const FINDERS = 5;
/** Operators chatting beside the panels (seed 002: "the operator's chat"; one, an assumption of the count). */
export const OPERATORS = 1;
/** Calls the model server runs at once, queueing the rest (assumption: the seed gives no number). */
const SERVER = 4;
/** Slots only interactive callers may take (seed 002 D2: `inflight_interactive_reserve` default 1). */
const RESERVE = 1;
/** A finder call's output tokens: 2 s + 40 ms × 1,450 ≈ 60 s (assumption). */
const FINDER_TOKENS = 1_450;
/** An operator's turn: 32 tokens, streamed, ≈ 3.3 s (assumption). */
const CHAT_TOKENS = 32;
/** The operator reads an answer and types the next turn (assumption). */
const OPERATOR_THINK_MS = 10_000;
/** The SDK's request timeout (seed 002: `request_timeout: float = 120.0`). */
const TIMEOUT_MS = 120_000;
/**
 * sluice's queue bound (assumption). Seed 002 D2's 300 s is an in-process limiter's, whose wait
 * never counts toward the request timeout (D4); in front of the SDK a gateway's queue wait does,
 * so a finder must be admitted early enough to finish inside 120 s: 120 − ~60 s of service, less
 * a margin.
 */
const QUEUE_TIMEOUT_S = 50;
/** Bulk waiters sluice holds (assumption): one round of the bulk slots drains inside the bound. */
const QUEUE_LIMIT = SERVER - RESERVE;

/**
 * The OpenAI SDK's default (seed 002: `llm_max_retries: int = 2`, 3 attempts; backoff from 0.5 s,
 * `Retry-After` honoured).
 */
const SDK_RETRIES: RetryPolicy = {
  maxAttempts: 3,
  sluiceRefusals: true,
  upstreamFailures: true,
  backoff: { baseMs: 500, maxMs: 8_000 },
};

/** Seed 002's panels beside the chat, for `durationMs` of seed time (the tests' short run is shorter). */
export function panelBurstProfile(durationMs = 600_000): LoadProfile {
  return {
    name: "panel-burst",
    seed: "002",
    title: `${PANELS} review panels × ${FINDERS} finders beside an operator's chat: every turn times out, or interactive keeps its slot`,
    story: [
      `one model server running ${SERVER} calls at once and queueing the rest (it accepts, it answers late)`,
      `${PANELS} panels, each sending ${FINDERS} bulk finder calls at once (${PANELS * FINDERS} per wave, ~60 s each) and its next wave when all ${FINDERS} end; ${OPERATORS} operator's streamed chat turns (32 tokens, ${OPERATOR_THINK_MS / 1000} s to read each)`,
      `every client: ${TIMEOUT_MS / 1000} s timeout, the SDK's two retries; through sluice: lane ${SERVER}, interactive reserve ${RESERVE}, queue ${QUEUE_LIMIT} (bound ${QUEUE_TIMEOUT_S} s), aging 60 s`,
    ],
    defaultScale: 0.02,
    pods: [
      {
        model: "smart",
        options: {
          maxNumSeqs: SERVER,
          serviceMs: 2_000,
          msPerOutputToken: 40,
          defaultOutputTokens: FINDER_TOKENS,
          tokensPerSecond: 0,
          seed: 1,
        },
      },
    ],
    config: (urls, s) => ({
      listen: "127.0.0.1:0",
      admission: { max_concurrency: 64, max_queued: 256, queue_timeout_s: s(300), aging_s: s(60) },
      models: [
        {
          name: "smart",
          max_concurrent_requests: SERVER,
          reserve: RESERVE,
          queue_limit: QUEUE_LIMIT,
          queue_timeout_s: s(QUEUE_TIMEOUT_S),
          pods: (urls.smart ?? []).map((url) => ({ url, max_inflight: SERVER })),
        },
      ],
    }),
    groups: [
      {
        name: "panels",
        request: { kind: "chat", model: "smart", maxTokens: FINDER_TOKENS },
        priority: "bulk",
        arrival: { kind: "fanout", callers: PANELS, width: FINDERS },
        timeoutMs: TIMEOUT_MS,
        retry: { sluice: SDK_RETRIES, direct: SDK_RETRIES },
      },
      {
        name: "interactive",
        request: { kind: "chat", model: "smart", maxTokens: CHAT_TOKENS, stream: true },
        priority: "interactive",
        arrival: { kind: "closed", clients: OPERATORS, thinkMs: OPERATOR_THINK_MS },
        timeoutMs: TIMEOUT_MS,
        retry: { sluice: SDK_RETRIES, direct: SDK_RETRIES },
      },
    ],
    durationMs,
    // A call sent just before the end gets its answer or its last retry's timeout.
    drainMs: 3 * TIMEOUT_MS + 10_000,
    checks(sluice, scale) {
      const i = sluice.groups.interactive;
      const rate = i?.success_rate ?? 0;
      const waitP99 = i?.queue_wait_ms?.p99;
      return [
        {
          name: "interactive success through sluice",
          target: "≥ 99.4 %",
          value: `${fmtPct(rate)} (${i?.completed ?? 0}/${i?.offered ?? 0})`,
          met: (i?.offered ?? 0) > 0 && rate >= 0.994,
        },
        {
          name: "interactive p99 queue wait through sluice ≤ 1 s of seed time",
          target: `≤ ${fmtMs(1000 * scale)}`,
          value: fmtMs(waitP99),
          met: waitP99 !== undefined && waitP99 <= 1000 * scale,
        },
      ];
    },
    // A turn that times out may still be answered by the SDK's third attempt, six minutes on:
    // the incident is the timeouts ("every caller timed out and retried together"), so they are
    // what is checked; the success rate is the value shown beside them.
    directChecks(direct) {
      const d = direct.groups.interactive;
      const timeouts = d?.failed_attempts.client_timeout ?? 0;
      return [
        {
          name: "the operator's turns time out behind the panels without sluice (the incident)",
          target: "> 0 timeouts",
          value: `${timeouts} timeouts; ${fmtPct(d?.success_rate)} (${d?.completed ?? 0}/${d?.offered ?? 0}) answered in the end`,
          met: timeouts > 0,
        },
      ];
    },
  };
}

/** Seed 002 at its own shape: ten minutes of three panels × five finders beside the operator's chat. */
export const panelBurst: LoadProfile = panelBurstProfile();
