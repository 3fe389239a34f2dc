/**
 * Seed 000: OCR pages offered at twice what a fleet of eight A40 pods carries. Each pod serves
 * 29–32 pages at once (as measured), keeps a small backlog, and past it refuses connections; the
 * operator's ceiling is 64 per pod. Without admission control every page is dispatched, the pods'
 * backlogs overflow, and the client retries refused pages, so replies take longer and longer and
 * nothing says the fleet is over capacity. Through sluice the widths converge on what the pods
 * carry (the first refusal halves a pod's width from the in-flight count at the refusal), a
 * bounded queue keeps the pods fed, and the rest is refused at once with the numbers to size a
 * window.
 */
import type { LoadProfile, RetryPolicy } from "../types.js";
import { fmtMs, fmtPct } from "./format.js";

/** One page: 19 s of service (seed 000). */
const SERVICE_MS = 19_000;
/** Pages each of the eight pods serves at once: the seed measured 29–32. */
const CAPACITY = [29, 30, 31, 32, 29, 30, 31, 32];
/** Pages a pod queues past that before it refuses: the seed's refusal came at 58 in flight. */
const BACKLOG = 26;
/** The operator's ceiling per pod (seed 000: 64 configured). */
const CEILING = 64;
/** Pages offered per service time to the eight pods: 522 against a fleet carrying ~250. */
const OFFERED = 522;

/**
 * The old orchestrator: a refused page goes back into its pool and is tried again, with backoff
 * (assumption: seed 000 says only that a client "sent more"; full jitter, 2 s → 64 s, until done).
 */
const RETRY_REFUSED: RetryPolicy = {
  maxAttempts: 1000,
  sluiceRefusals: false,
  upstreamFailures: true,
  backoff: { baseMs: 2_000, maxMs: 64_000 },
};

/**
 * A client that honours sluice's answer (the third run): a refused page is sent again after the
 * refusal's `Retry-After`, until it is done — the orchestrator's persistence, told when.
 */
const HONOUR_RETRY_AFTER: RetryPolicy = {
  maxAttempts: 1000,
  sluiceRefusals: true,
  upstreamFailures: true,
  backoff: { baseMs: 2_000, maxMs: 64_000 },
};

/** The shape of the flood; the defaults are the seed's. */
export interface OcrFloodSize {
  /** Pages each pod serves at once, one entry per pod. **Default:** eight pods, 29–32. */
  capacities?: number[];
  /** How long pages are offered, in service times. **Default:** `6`. */
  services?: number;
}

/** Seed 000's flood, at the seed's size or a smaller one (the tests' short run). */
export function ocrFloodProfile(size: OcrFloodSize = {}): LoadProfile {
  const capacity = size.capacities ?? CAPACITY;
  const carried = capacity.reduce((a, b) => a + b, 0);
  // A smaller fleet is offered the same multiple of what it carries.
  const offered = Math.round((OFFERED * carried) / CAPACITY.reduce((a, b) => a + b, 0));
  const durationMs = (size.services ?? 6) * SERVICE_MS;
  // The widths converge on the first refusals, within the first service time; the window
  // starts a service time after that, so a call dispatched before a cut is never counted.
  const warmupMs = 2 * SERVICE_MS;
  return {
    name: "ocr-flood",
    seed: "000",
    title:
      "OCR pages offered at twice what the pods carry: refused connections and growing latency, or a fast no",
    story: [
      `${capacity.length} OCR pods serving ${capacity.join("/")} pages at once (${carried} in all), a backlog of ${BACKLOG}, then refused connections`,
      `${offered} pages offered per ${SERVICE_MS / 1000} s of service for ${durationMs / SERVICE_MS} service times; ceiling ${CEILING} per pod`,
      "without sluice the client dispatches every page and retries refused ones with backoff (the seed's orchestrator)",
    ],
    defaultScale: 0.1,
    pods: capacity.map((maxNumSeqs, i) => ({
      model: "ocr",
      options: {
        maxNumSeqs,
        maxWaiting: BACKLOG,
        overflow: "refuse",
        serviceMs: SERVICE_MS,
        jitterSigma: 0.25,
        echoPrefix: "/ocr/",
        seed: i + 1,
      },
    })),
    config: (urls, s) => ({
      listen: "127.0.0.1:0",
      admission: { max_concurrency: 1024, max_queued: 1024, queue_timeout_s: s(60) },
      models: [
        {
          name: "ocr",
          // No lane bound of its own: the pods' adaptive widths are the bound (seed 000).
          max_concurrent_requests: 0,
          reserve: 0,
          // A bounded queue keeps every pod fed when it finishes a page: half of what the
          // fleet carries, so a page waits about half a service time (admitted ≤ 2 × service).
          queue_limit: Math.round(carried / 2),
          queue_timeout_s: s((2 * SERVICE_MS) / 1000),
          adaptive: { floor: 4 },
          pods: (urls.ocr ?? []).map((url) => ({ url, max_inflight: CEILING })),
        },
      ],
      routes: [{ match: "/ocr/", model: "ocr" }],
    }),
    groups: [
      {
        name: "pages",
        request: { kind: "echo", model: "ocr", path: "/ocr/", bodyBytes: 4 * 1024 },
        arrival: { kind: "open", perSecond: offered / (SERVICE_MS / 1000) },
        retry: { direct: RETRY_REFUSED },
      },
    ],
    // The first run's client takes a refusal as the page's answer; this one sends the page again
    // after the refusal's Retry-After, as the direct run's orchestrator retries a refused connection.
    honouring: { label: "through sluice, Retry-After honoured", retry: HONOUR_RETRY_AFTER },
    durationMs,
    warmupMs,
    checks(sluice, scale) {
      const service = SERVICE_MS * scale;
      return [
        {
          name: "admitted mean latency through sluice ≤ 2 × service time",
          target: `≤ ${fmtMs(2 * service)}`,
          value: fmtMs(sluice.latency_ms?.mean),
          met: sluice.latency_ms !== null && sluice.latency_ms.mean <= 2 * service,
        },
        {
          name: "sluice's refusals answered in < 50 ms (p99)",
          target: "< 50 ms",
          value: fmtMs(sluice.refusal_ms?.p99),
          met: sluice.refusal_ms !== null && sluice.refusal_ms.p99 < 50,
        },
        {
          name: "every sluice refusal carries Retry-After and the sizing headers",
          target: `${sluice.sluice_refusals}`,
          value: `${sluice.refusals_with_sizing_headers}`,
          met: sluice.sluice_refusals > 0 && sluice.refusals_with_sizing_headers === sluice.sluice_refusals,
        },
        {
          name: "pod refusals through sluice after the widths converge",
          target: "0",
          value: `${sluice.pod_refusals_after_warmup} (${sluice.pod_refusals} in the first ${fmtMs(warmupMs * scale)})`,
          met: sluice.pod_refusals_after_warmup === 0,
        },
        {
          name: "pod utilization through sluice after the widths converge",
          target: "≥ 95 %",
          value: fmtPct(sluice.utilization),
          met: sluice.utilization >= 0.95,
        },
      ];
    },
    honouringChecks(honouring) {
      return [
        {
          name: "pod refusals through sluice after the widths converge (Retry-After honoured)",
          target: "0",
          value: `${honouring.pod_refusals_after_warmup} (${honouring.pod_refusals} in all)`,
          met: honouring.pod_refusals_after_warmup === 0,
        },
      ];
    },
    directChecks(direct) {
      return [
        {
          name: "pods refuse connections without sluice",
          target: "> 0",
          value: `${direct.pod_refusals}`,
          met: direct.pod_refusals > 0,
        },
      ];
    },
  };
}

/** Seed 000 at its own size: eight pods, 522 pages per 19 s offered for six service times. */
export const ocrFlood: LoadProfile = ocrFloodProfile();
