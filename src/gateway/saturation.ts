/**
 * Polls the `metrics_url` of pods that have one (the shell's job, not the core's: it is I/O) and
 * turns a saturated reading into a congestion signal for the pod's adaptive width. A pod whose
 * metrics are older than three poll intervals counts as saturated (DESIGN §1.3): a pod too busy
 * to answer its metrics endpoint should not be sent more.
 *
 * Each scrape's running count (`vllm:num_requests_running`) goes to the Governor too, trusted for
 * the same three intervals: calls the fleet no longer counts (a replica paused past its lease) or
 * never counted (a client going straight to the pod) keep their slots until the pod's own count
 * shows them ending (docs/fleet.md).
 */
import type { Logger } from "pino";
import { request } from "undici";
import type { ModelConfig } from "../config/schema.js";
import type { Governor } from "../governor/governor.js";
import { isSaturated, parseVllmMetrics } from "./vllm-metrics.js";

interface Watched {
  pod: string;
  url: string;
  maxWaiting: number;
  intervalMs: number;
  lastOkAt: number;
  timer: NodeJS.Timeout | undefined;
}

const STALE_INTERVALS = 3;
const RUNNING = "vllm:num_requests_running";

export class SaturationPoller {
  readonly #watched: Watched[] = [];

  constructor(
    models: readonly ModelConfig[],
    readonly governor: Governor,
    readonly log: Logger,
  ) {
    for (const m of models) {
      if (m.adaptive === false) continue; // a metrics_url there is refused by the config
      for (const p of m.pods) {
        if (p.metricsUrl === undefined) continue;
        this.#watched.push({
          pod: p.url,
          url: p.metricsUrl,
          maxWaiting: m.adaptive.maxWaiting,
          intervalMs: m.adaptive.metricsPollMs,
          lastOkAt: performance.now(),
          timer: undefined,
        });
      }
    }
  }

  start(): void {
    for (const w of this.#watched) {
      w.lastOkAt = performance.now();
      w.timer = setInterval(() => void this.#poll(w), w.intervalMs);
      w.timer.unref();
    }
  }

  stop(): void {
    for (const w of this.#watched) clearInterval(w.timer);
  }

  /** One scrape of one pod. */
  async #poll(w: Watched): Promise<void> {
    try {
      const res = await request(w.url, { headersTimeout: w.intervalMs, bodyTimeout: w.intervalMs });
      const text = await res.body.text();
      const load = res.statusCode === 200 ? parseVllmMetrics(text) : undefined;
      if (load !== undefined) {
        w.lastOkAt = performance.now();
        // Only a pod that states its running count reports it (a missing metric is not 0 running).
        if (text.includes(RUNNING))
          this.governor.reportRunning(w.pod, load.running, STALE_INTERVALS * w.intervalMs);
        if (isSaturated(load, w.maxWaiting)) this.governor.reportSaturation(w.pod);
        return;
      }
    } catch (error) {
      this.log.debug({ pod: w.pod, err: (error as Error).message }, "metrics scrape failed");
    }
    if (performance.now() - w.lastOkAt > STALE_INTERVALS * w.intervalMs)
      this.governor.reportSaturation(w.pod);
  }
}
