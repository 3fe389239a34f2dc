/**
 * Seed 003: a bound of 32 whole exchanges plus a FIFO queue of 128, qualified as the ADR asks:
 * twenty simultaneous threads (five engineers × four) through both the buffered and the
 * streaming paths, exact bytes, no leaked reservation; then a burst past the bound, where 32 run,
 * 128 wait at most 30 s and the rest are refused at once. Straight to the provider the burst is
 * met by the provider's own 429s.
 */
import type { LoadProfile } from "../types.js";
import { fmtMs } from "./format.js";

/** Whole exchanges admitted, and unread requests queued FIFO (seed 003). */
const ADMITTED = 32;
const QUEUED = 128;
/** The queue wait bound (seed 003: 30 seconds). */
const QUEUE_TIMEOUT_S = 30;
/** Exchanges at once past the bound (assumption: seed 003 qualifies the bound, it describes no burst). */
const BURST = 200;
/** Exchanges the provider runs at once before it answers 429 (assumption: seed 003 gives no provider limit). */
const PROVIDER_LIMIT = 40;

/** Seed 003's qualification: the threads for `threadsMs` of seed time, then the burst. */
export function modelCapacityProfile(threadsMs = 60_000): LoadProfile {
  const burstAtMs = threadsMs + 10_000;
  return {
    name: "model-capacity",
    seed: "003",
    title: `${ADMITTED} admitted + ${QUEUED} queued: twenty threads on both paths, then a burst of ${BURST}`,
    story: [
      `a provider that runs ${PROVIDER_LIMIT} exchanges at once and answers 429 past that`,
      `through sluice: ${ADMITTED} in flight, ${QUEUED} queued (FIFO), ${QUEUE_TIMEOUT_S} s queue bound`,
      `20 threads (10 buffered, 10 streaming) for ${threadsMs / 1000} s, then ${BURST} exchanges at once (half streaming)`,
    ],
    defaultScale: 0.1,
    pods: [
      {
        model: "worker-model",
        options: {
          maxNumSeqs: PROVIDER_LIMIT,
          maxWaiting: 0,
          overflow: "429",
          serviceMs: 3_000,
          defaultOutputTokens: 48,
          tokensPerSecond: 40,
          seed: 1,
        },
      },
    ],
    config: (urls, s) => ({
      listen: "127.0.0.1:0",
      admission: { max_concurrency: ADMITTED, max_queued: QUEUED, queue_timeout_s: s(QUEUE_TIMEOUT_S) },
      models: [
        {
          name: "worker-model",
          max_concurrent_requests: ADMITTED,
          reserve: 0,
          queue_limit: QUEUED,
          queue_timeout_s: s(QUEUE_TIMEOUT_S),
          pods: (urls["worker-model"] ?? []).map((url) => ({ url, max_inflight: ADMITTED })),
        },
      ],
    }),
    groups: [
      {
        name: "threads-buffered",
        request: { kind: "chat", model: "worker-model" },
        arrival: { kind: "closed", clients: 10, thinkMs: 1_000 },
        stopMs: threadsMs,
      },
      {
        name: "threads-streaming",
        request: { kind: "chat", model: "worker-model", stream: true },
        arrival: { kind: "closed", clients: 10, thinkMs: 1_000 },
        stopMs: threadsMs,
      },
      {
        name: "burst-buffered",
        request: { kind: "chat", model: "worker-model" },
        arrival: { kind: "burst", count: BURST / 2 },
        startMs: burstAtMs,
      },
      {
        name: "burst-streaming",
        request: { kind: "chat", model: "worker-model", stream: true },
        arrival: { kind: "burst", count: BURST / 2 },
        startMs: burstAtMs,
      },
    ],
    durationMs: burstAtMs + 1_000,
    drainMs: 2 * QUEUE_TIMEOUT_S * 1000,
    checks(sluice, scale) {
      const g = sluice.groups;
      const threads = ["threads-buffered", "threads-streaming"].map((n) => g[n]);
      const threadsOk = threads.every((t) => t !== undefined && t.offered > 0 && t.completed === t.offered);
      const burstDone = (g["burst-buffered"]?.completed ?? 0) + (g["burst-streaming"]?.completed ?? 0);
      const waitMax = sluice.queue_wait_ms?.max;
      return [
        {
          name: "twenty threads through sluice: every exchange completed, buffered and streaming",
          target: "100 % of each",
          value: threads.map((t) => `${t?.completed ?? 0}/${t?.offered ?? 0}`).join(", "),
          met: threadsOk,
        },
        {
          name: `the burst of ${BURST}: admitted and served (${ADMITTED} + ${QUEUED})`,
          target: `${ADMITTED + QUEUED}`,
          value: `${burstDone}`,
          met: burstDone === ADMITTED + QUEUED,
        },
        {
          name: "exchanges in flight at the provider through sluice",
          target: `≤ ${ADMITTED}`,
          value: `${sluice.upstream_max_inflight}`,
          met: sluice.upstream_max_inflight <= ADMITTED,
        },
        {
          name: `longest queue wait through sluice ≤ ${QUEUE_TIMEOUT_S} s of seed time`,
          target: `≤ ${fmtMs(QUEUE_TIMEOUT_S * 1000 * scale)}`,
          value: fmtMs(waitMax),
          met: waitMax !== undefined && waitMax <= QUEUE_TIMEOUT_S * 1000 * scale,
        },
      ];
    },
    directChecks(direct) {
      return [
        {
          name: "provider 429s without sluice",
          target: "> 0",
          value: `${direct.throttles}`,
          met: direct.throttles > 0,
        },
      ];
    },
  };
}

/** Seed 003 at its own size: a minute of twenty threads, then the burst. */
export const modelCapacity: LoadProfile = modelCapacityProfile();
