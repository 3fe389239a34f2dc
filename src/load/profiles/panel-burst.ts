/**
 * Seed 002: review panels fan bulk finder calls out at twelve times what the model's lane
 * carries while an operator's chat turns keep arriving. Straight to the server everything
 * queues there, every call waits past its client timeout, and the SDK's retries re-send it: the
 * operator's turns fail with the panels'. Through sluice the lane admits eight, holds an
 * interactive reserve, queues a bounded amount in priority order and refuses the rest at once.
 */
import type { LoadProfile, RetryPolicy } from "../types.js";
import { fmtMs, fmtPct } from "./format.js";

const LANE = 8;
const RESERVE = 4;
const OPERATORS = 4;
/** The SDK's request timeout (seed 002: `request_timeout: 120`). */
const TIMEOUT_MS = 120_000;

/** The OpenAI SDK's default: two retries, backoff from 0.5 s, `Retry-After` honoured. */
const SDK_RETRIES: RetryPolicy = {
  maxAttempts: 3,
  sluiceRefusals: true,
  upstreamFailures: true,
  backoff: { baseMs: 500, maxMs: 8_000 },
};

/** Seed 002's burst, for `durationMs` of seed time (the tests' short run is shorter). */
export function panelBurstProfile(durationMs = 240_000): LoadProfile {
  return {
    name: "panel-burst",
    seed: "002",
    title:
      "review panels at 12× the lane beside an operator's chat: every turn times out, or interactive keeps its slots",
    story: [
      `one model server running ${LANE} calls at once and queueing the rest (it accepts, it answers late)`,
      `panels: ${12 * LANE} bulk finder calls at once (12× the lane, 256 tokens each); ${OPERATORS} operators' chat turns (32 tokens, streamed)`,
      `every client: ${TIMEOUT_MS / 1000} s timeout, the SDK's two retries; through sluice: lane ${LANE}, interactive reserve ${RESERVE}, queue 16`,
    ],
    defaultScale: 0.04,
    pods: [
      {
        model: "smart",
        options: {
          maxNumSeqs: LANE,
          serviceMs: 2_000,
          msPerOutputToken: 40,
          defaultOutputTokens: 256,
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
          max_concurrent_requests: LANE,
          reserve: RESERVE,
          // Bulk waits for one of the 4 slots it may take: 16 waiting drain well inside the
          // client's 120 s, and the queue bound stays below it (seed 002, D2).
          queue_limit: 16,
          queue_timeout_s: s(100),
          pods: (urls.smart ?? []).map((url) => ({ url, max_inflight: LANE })),
        },
      ],
    }),
    groups: [
      {
        name: "panels",
        request: { kind: "chat", model: "smart", maxTokens: 256 },
        priority: "bulk",
        arrival: { kind: "closed", clients: 12 * LANE },
        timeoutMs: TIMEOUT_MS,
        retry: { sluice: SDK_RETRIES, direct: SDK_RETRIES },
      },
      {
        name: "interactive",
        request: { kind: "chat", model: "smart", maxTokens: 32, stream: true },
        priority: "interactive",
        arrival: { kind: "closed", clients: OPERATORS, thinkMs: 2_000 },
        timeoutMs: TIMEOUT_MS,
        retry: { sluice: SDK_RETRIES, direct: SDK_RETRIES },
      },
    ],
    durationMs,
    // One more timeout: a call sent just before the end gets its answer or its timeout.
    drainMs: TIMEOUT_MS + 10_000,
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
    directChecks(direct) {
      const d = direct.groups.interactive;
      return [
        {
          name: "interactive success without sluice (the incident)",
          target: "< 99.4 %",
          value: `${fmtPct(d?.success_rate)} (${d?.completed ?? 0}/${d?.offered ?? 0})`,
          met: (d?.success_rate ?? 1) < 0.994,
        },
      ];
    },
  };
}

/** Seed 002 at its own size: four minutes of panels beside four operators. */
export const panelBurst: LoadProfile = panelBurstProfile();
