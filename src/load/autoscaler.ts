/**
 * Seed 004's autoscaler, replayed: it watches the clients' latency and adds a gateway replica
 * while the latency is above its target. Throttling and queueing at a shared provider account
 * raise that latency, so it adds replicas — and each brings its own limit to the account: "the
 * system scales into the wall". The decision is a pure function; the loop around it starts
 * replicas one at a time and records when each joined.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { ReplicaStep, RequestRecord } from "./stats.js";
import type { AutoscaleSpec } from "./types.js";

/** What one look sees: the requests that ended since the last look, and those still open. */
export interface LookWindow {
  ended: number;
  /** Mean first attempt → end of those, real ms; null when none ended. */
  meanMs: number | null;
  open: number;
}

/** Whether a look adds a replica: latency above the target, or nothing ending while work is open. */
export function shouldScaleOut(w: LookWindow, targetMs: number): boolean {
  if (w.meanMs === null) return w.open > 0;
  return w.meanMs > targetMs;
}

/** The window of requests that ended in (`sinceMs`, `nowMs`], real ms. */
export function lookWindow(
  requests: readonly RequestRecord[],
  sinceMs: number,
  nowMs: number,
  open: number,
): LookWindow {
  let ended = 0;
  let sum = 0;
  for (const r of requests) {
    if (r.endMs <= sinceMs || r.endMs > nowMs) continue;
    ended++;
    sum += r.endMs - r.startMs;
  }
  return { ended, meanMs: ended === 0 ? null : sum / ended, open };
}

export interface AutoscalerOptions {
  spec: AutoscaleSpec;
  /** Most replicas (the profile's `replicas`). */
  max: number;
  /** Real ms per seed ms. */
  scale: number;
  /** Real ms since the run started. */
  now(): number;
  /** The clients' requests so far and how many are open. */
  requests(): readonly RequestRecord[];
  open(): number;
  /** Puts one more replica in the clients' rotation. */
  addReplica(): Promise<void>;
}

/** The loop: look every `everyMs`, add one replica per look that asks for it, until `max` or `stop()`. */
export class Autoscaler {
  readonly steps: ReplicaStep[];
  /** Why a replica could not be started, when one could not: the run fails with it. */
  error: string | undefined;
  readonly #o: AutoscalerOptions;
  readonly #stop = new AbortController();
  #loop: Promise<void> | null = null;

  constructor(options: AutoscalerOptions) {
    this.#o = options;
    this.steps = [{ at_ms: 0, replicas: options.spec.from, signal_ms: null }];
  }

  /** Starts looking; the first look is `everyMs` after now. */
  start(): void {
    this.#loop ??= this.#run().catch((e: unknown) => {
      this.error = `the autoscaler could not add a replica: ${e instanceof Error ? e.message : String(e)}`;
    });
  }

  /** Stops looking and waits for a replica still starting, so the caller can close every one. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const o = this.#o;
    let count = o.spec.from;
    let since = o.now();
    while (count < o.max) {
      try {
        await sleep(o.spec.everyMs * o.scale, undefined, { signal: this.#stop.signal });
      } catch {
        return;
      }
      const now = o.now();
      const w = lookWindow(o.requests(), since, now, o.open());
      since = now;
      if (!shouldScaleOut(w, o.spec.latencyMs * o.scale)) continue;
      await o.addReplica();
      count++;
      this.steps.push({
        at_ms: Math.round(o.now()),
        replicas: count,
        signal_ms: w.meanMs === null ? null : Math.round(w.meanMs),
      });
      if (this.#stop.signal.aborted) return;
    }
  }
}
