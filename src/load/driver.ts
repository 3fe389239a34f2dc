/**
 * Drives a profile's client groups against one target — the gateway, or the pods themselves —
 * and records every attempt and every logical request. Arrivals follow the group's shape
 * (closed loops, Poisson, a burst); retries follow its policy for that target. Seed time is
 * turned into real time here, once: `real ms = seed ms × scale`.
 */
import { setMaxListeners } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { Agent } from "undici";
import { Mulberry32 } from "../sim/random.js";
import { type AttemptResult, attempt } from "./client.js";
import type { ExpectedAnswer } from "./pods.js";
import { prepareRequest } from "./requests.js";
import type { Attempt, RequestRecord } from "./stats.js";
import type { ClientGroup, RetryPolicy } from "./types.js";

/** Where requests go. */
export interface DriveTarget {
  kind: "sluice" | "direct";
  /**
   * The base URL for a request of `model`: the gateway (the next replica in turn, or replica
   * `replica` for a group pinned to one: `ClientGroup.replica`), or the model's next pod in turn.
   */
  baseFor(model: string, replica?: number): string;
}

export interface DriveOptions {
  target: DriveTarget;
  groups: readonly ClientGroup[];
  /** Real ms per seed ms. */
  scale: number;
  /** When groups stop offering by default, seed ms. */
  durationMs: number;
  /** The exact answers of each model's pods. */
  expected: (model: string) => ExpectedAnswer;
  /** Longest the run waits for requests still going once offering has stopped, real ms. */
  drainCapMs: number;
  /** Calls at seed times from the start (probes: the warm-up's end, the offering's end). */
  marks?: ReadonlyArray<{ atMs: number; fn: () => void }>;
  /** Seed of the arrival and backoff draws. **Default:** `1`. */
  seed?: number;
}

/** Counters the progress display reads while the run goes. */
export interface LiveCounts {
  offered: number;
  completed: number;
  notCompleted: number;
  attempts: number;
  /** Logical requests started and not yet ended (sending, waiting out a retry, or in flight). */
  open: number;
}

/** One run of the clients against one target. */
export class Driver {
  readonly attempts: Attempt[] = [];
  readonly requests: RequestRecord[] = [];
  readonly live: LiveCounts = { offered: 0, completed: 0, notCompleted: 0, attempts: 0, open: 0 };
  /** Real ms from the start until offering ends (the longest group). */
  readonly offerMs: number;
  readonly #o: DriveOptions;
  readonly #agent = new Agent({ headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 4000 });
  readonly #stop = new AbortController();
  readonly #rng: Mulberry32;
  readonly #pending = new Set<Promise<void>>();
  readonly #errors: unknown[] = [];
  #t0 = 0;

  constructor(options: DriveOptions) {
    this.#o = options;
    this.#rng = new Mulberry32(options.seed ?? 1);
    // Every attempt in flight listens for the run's stop: thousands at once is the point.
    setMaxListeners(0, this.#stop.signal);
    this.offerMs = Math.max(...options.groups.map((g) => g.stopMs ?? options.durationMs)) * options.scale;
  }

  /** Real ms since the run started. */
  now(): number {
    return performance.now() - this.#t0;
  }

  /** Runs every group, then drains; resolves when nothing is left going. */
  async run(): Promise<void> {
    this.#warmUp();
    this.#t0 = performance.now();
    const timers = (this.#o.marks ?? []).map((m) => setTimeout(m.fn, m.atMs * this.#o.scale));
    try {
      await Promise.all(this.#o.groups.map((g, i) => this.#offer(g, i)));
      await this.#drain();
      if (this.#errors.length > 0) throw this.#errors[0];
    } finally {
      for (const t of timers) clearTimeout(t);
      await this.#agent.close().catch(() => this.#agent.destroy());
    }
  }

  /**
   * Prepares one request of each group and throws it away, before the clock starts: the first
   * arrivals then do not wait on lazy first-use work on this thread (the tokenizer's tables,
   * compiling the answer builders) while the gateway, on its own thread, is already granting.
   * That wait would hold calls the gateway has counted away from a provider whose token bucket is
   * still full, and the refill the gateway earns meanwhile is refill the provider never had.
   */
  #warmUp(): void {
    for (const g of this.#o.groups)
      prepareRequest(g, -1, this.#o.target.kind === "sluice", this.#o.expected(g.request.model));
  }

  async #drain(): Promise<void> {
    const deadline = sleep(this.#o.drainCapMs, undefined, { ref: false }).then(() => "late" as const);
    while (this.#pending.size > 0) {
      const r = await Promise.race([Promise.race(this.#pending).then(() => "one" as const), deadline]);
      if (r === "late") {
        this.#stop.abort();
        await Promise.all(this.#pending);
        return;
      }
    }
  }

  async #offer(group: ClientGroup, gi: number): Promise<void> {
    const { scale } = this.#o;
    const startMs = (group.startMs ?? 0) * scale;
    const stopMs = (group.stopMs ?? this.#o.durationMs) * scale;
    if (startMs > 0) await sleep(startMs);
    let index = 0;
    const a = group.arrival;
    if (a.kind === "burst") {
      for (let i = 0; i < a.count; i++) this.#spawn(group, gi, index++);
    } else if (a.kind === "open") {
      const meanGapMs = (1000 / a.perSecond) * scale;
      let next = this.now();
      while (next < stopMs) {
        const wait = next - this.now();
        if (wait > 1) await sleep(wait);
        // Every arrival due by now, at once: a timer per arrival would fall behind at high rates.
        while (next <= this.now() && next < stopMs) {
          this.#spawn(group, gi, index++);
          next += -Math.log(1 - this.#rng.next()) * meanGapMs;
        }
      }
    } else if (a.kind === "fanout") {
      const thinkMs = (a.thinkMs ?? 0) * scale;
      let waves = 0;
      const callers = Array.from({ length: a.callers }, async () => {
        while (this.now() < stopMs && !this.#stop.signal.aborted) {
          const w = waves++;
          const wave = Array.from({ length: a.width }, () =>
            this.#track(this.#request(group, gi, index++, w)),
          );
          await Promise.all(wave);
          if (thinkMs > 0) await sleep(thinkMs);
        }
      });
      await Promise.all(callers);
    } else {
      const thinkMs = (a.thinkMs ?? 0) * scale;
      const loops = Array.from({ length: a.clients }, async () => {
        while (this.now() < stopMs && !this.#stop.signal.aborted) {
          await this.#track(this.#request(group, gi, index++));
          if (thinkMs > 0) await sleep(thinkMs);
        }
      });
      await Promise.all(loops);
    }
  }

  #spawn(group: ClientGroup, gi: number, index: number): void {
    void this.#track(this.#request(group, gi, index));
  }

  /** Keeps `p` until it settles; a request that throws (a bug, not a failed call) fails the run after the drain. */
  #track(p: Promise<void>): Promise<void> {
    const tracked: Promise<void> = p
      .catch((e: unknown) => {
        this.#errors.push(e);
      })
      .finally(() => this.#pending.delete(tracked));
    this.#pending.add(tracked);
    return tracked;
  }

  /** One logical request: attempts until it succeeds or its policy gives up. */
  async #request(group: ClientGroup, gi: number, index: number, wave?: number): Promise<void> {
    const { target, scale } = this.#o;
    const throughSluice = target.kind === "sluice";
    const req = prepareRequest(group, index, throughSluice, this.#o.expected(group.request.model));
    const policy = (throughSluice ? group.retry?.sluice : group.retry?.direct) ?? ONE_ATTEMPT;
    const timeoutMs = group.timeoutMs === undefined ? undefined : group.timeoutMs * scale;
    const startMs = this.now();
    this.live.offered++;
    this.live.open++;
    let n = 0;
    let last: AttemptResult;
    for (;;) {
      n++;
      const at = this.now();
      last = await attempt(
        target.baseFor(group.request.model, group.replica),
        req,
        this.#agent,
        this.#stop.signal,
        timeoutMs,
      );
      this.live.attempts++;
      this.attempts.push({ group: gi, startMs: at, ...last });
      const wait = this.#retryWait(last, policy, n);
      if (wait === undefined || this.#stop.signal.aborted) break;
      try {
        await sleep(wait, undefined, { signal: this.#stop.signal });
      } catch {
        break;
      }
    }
    this.live.open--;
    if (last.code === "ok") this.live.completed++;
    else this.live.notCompleted++;
    this.requests.push({
      group: gi,
      startMs,
      endMs: this.now(),
      attempts: n,
      code: last.code,
      ...(wave === undefined ? {} : { wave }),
    });
  }

  /** Real ms to wait before the next attempt, or undefined to give up. */
  #retryWait(a: AttemptResult, policy: RetryPolicy, attempts: number): number | undefined {
    if (a.code === "ok" || attempts >= policy.maxAttempts) return undefined;
    const retryable = a.sluiceRefusal
      ? policy.sluiceRefusals
      : isUpstreamFailure(a) && policy.upstreamFailures;
    if (!retryable) return undefined;
    if (a.retryAfterMs >= 0) return a.retryAfterMs;
    const cap = Math.min(policy.backoff.maxMs, policy.backoff.baseMs * 2 ** (attempts - 1));
    return this.#rng.next() * cap * this.#o.scale;
  }
}

const ONE_ATTEMPT: RetryPolicy = {
  maxAttempts: 1,
  sluiceRefusals: false,
  upstreamFailures: false,
  backoff: { baseMs: 0, maxMs: 0 },
};

/** The pod's doing (or the client's timeout), as opposed to a bad request or a byte mismatch. */
function isUpstreamFailure(a: AttemptResult): boolean {
  if (a.status === 0) return a.code !== "cut_at_drain";
  return a.status === 429 || a.status >= 500;
}
