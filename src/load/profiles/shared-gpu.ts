/**
 * Seed 001: three demand sources — ingestion embeddings (bge-m3), enrichment and orchestration
 * (qwen) — on one GB10 box whose unified memory holds fewer sequences than its two vLLM
 * endpoints are configured to run. Sized locally, their sum passes the memory point: an OOM
 * takes the whole host away, and the sources retrying as it comes back take it down again.
 * Through sluice each endpoint has its ceiling and both share one GPU-group budget below the
 * memory point: no OOM.
 */
import type { LoadProfile, RetryPolicy } from "../types.js";

/** Sequences the GB10's memory holds across both endpoints (assumption: seed 001 gives no number). */
const OOM_AT = 48;
/** How long an OOM keeps the host away (assumption: seed 001 says only that it went unreachable). */
const DOWN_MS = 15_000;
/** The GPU-group budget sluice enforces (seed 001: `GPU_CONCURRENCY_BUDGETS={"gb10": 40}`). */
const GROUP_BUDGET = 40;
const DURATION_MS = 90_000;

/** The demand sources retry what failed, with backoff, and honour sluice's Retry-After (assumption: 5 attempts, 1 s → 8 s). */
const RETRY: RetryPolicy = {
  maxAttempts: 5,
  sluiceRefusals: true,
  upstreamFailures: true,
  backoff: { baseMs: 1_000, maxMs: 8_000 },
};

/** Seed 001's box, offered for `durationMs` of seed time (the tests' short run is shorter). */
export function sharedGpuProfile(durationMs = DURATION_MS): LoadProfile {
  return {
    name: "shared-gpu",
    seed: "001",
    title:
      "three demand sources on one GPU box with an OOM point: the host goes away, or a group budget holds",
    story: [
      `one GB10 host: qwen and bge-m3 each configured for 64 sequences, memory for ${OOM_AT} across both`,
      "embeddings (24 at once), enrichment (24, bulk) and orchestration (16, interactive), each sized locally",
      `through sluice: qwen 32, bge-m3 16, GPU group gb10 ${GROUP_BUDGET}`,
    ],
    defaultScale: 0.1,
    machines: { gb10: { oomAt: OOM_AT, downMs: DOWN_MS } },
    pods: [
      {
        model: "qwen",
        machine: "gb10",
        options: { maxNumSeqs: 64, serviceMs: 3_000, defaultOutputTokens: 64, tokensPerSecond: 0, seed: 1 },
      },
      {
        model: "bge-m3",
        machine: "gb10",
        options: { maxNumSeqs: 64, serviceMs: 300, embeddingDims: 16, seed: 2 },
      },
    ],
    config: (urls, s) => ({
      listen: "127.0.0.1:0",
      admission: { max_concurrency: 128, max_queued: 512, queue_timeout_s: s(120) },
      models: [
        {
          name: "qwen",
          max_concurrent_requests: 32,
          reserve: 4,
          queue_limit: 256,
          queue_timeout_s: s(120),
          pods: (urls.qwen ?? []).map((url) => ({ url, max_inflight: 32, gpu_group: "gb10" })),
        },
        {
          name: "bge-m3",
          max_concurrent_requests: 16,
          reserve: 0,
          queue_limit: 256,
          queue_timeout_s: s(120),
          pods: (urls["bge-m3"] ?? []).map((url) => ({ url, max_inflight: 16, gpu_group: "gb10" })),
        },
      ],
      gpu_groups: { gb10: { max_inflight: GROUP_BUDGET } },
    }),
    groups: [
      {
        name: "embeddings",
        request: { kind: "embedding", model: "bge-m3" },
        arrival: { kind: "closed", clients: 24 },
        retry: { sluice: RETRY, direct: RETRY },
      },
      {
        name: "enrichment",
        request: { kind: "chat", model: "qwen", maxTokens: 64 },
        priority: "bulk",
        arrival: { kind: "closed", clients: 24 },
        retry: { sluice: RETRY, direct: RETRY },
      },
      {
        name: "orchestration",
        request: { kind: "chat", model: "qwen", stream: true, maxTokens: 64 },
        priority: "interactive",
        arrival: { kind: "closed", clients: 16, thinkMs: 2_000 },
        retry: { sluice: RETRY, direct: RETRY },
      },
    ],
    durationMs,
    drainMs: 60_000,
    checks(sluice) {
      const maxRunning = sluice.machine_max_running.gb10 ?? 0;
      return [
        {
          name: "OOM events through sluice",
          target: "0",
          value: `${sluice.oom_events}`,
          met: sluice.oom_events === 0,
        },
        {
          name: "sequences running at once on the box through sluice (the GPU-group budget)",
          target: `≤ ${GROUP_BUDGET}`,
          value: `${maxRunning}`,
          met: maxRunning <= GROUP_BUDGET,
        },
      ];
    },
    directChecks(direct) {
      return [
        {
          name: "OOM events without sluice",
          target: "> 0",
          value: `${direct.oom_events}`,
          met: direct.oom_events > 0,
        },
      ];
    },
  };
}

/** Seed 001 at its own size: 90 s of the three sources. */
export const sharedGpu: LoadProfile = sharedGpuProfile();
