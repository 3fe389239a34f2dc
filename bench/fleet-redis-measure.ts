/**
 * How `npm run bench:fleet` drives a contender (fleet-redis-contenders.ts), in this process:
 *
 * - closed loop: `callers` async callers, each granting, releasing (waiting for the release when
 *   the library's release returns a promise) and granting again, for a warm-up then a window;
 *   ops/s = grant + release pairs completed in the window ÷ its length;
 * - paced: grants started at a fixed rate (open loop, not waiting for earlier ones), so a slow
 *   grant cannot slow the arrivals down and hide itself (coordinated omission). Node's timers
 *   fire about once a millisecond, so arrivals come in small bursts of rate ÷ 1000.
 *
 * The grant latency of one call is from calling `acquire()` to the caller holding the slot
 * (`process.hrtime.bigint()`), in microseconds.
 */
import { constants, PerformanceObserver } from "node:perf_hooks";
import type { Contender } from "./fleet-redis-contenders.js";

const now = process.hrtime.bigint;

/** Samples in a growable typed array (no boxing; millions fit). */
export class Samples {
  #a = new Float64Array(1 << 15);
  n = 0;

  push(v: number): void {
    if (this.n === this.#a.length) {
      const b = new Float64Array(this.#a.length * 2);
      b.set(this.#a);
      this.#a = b;
    }
    this.#a[this.n++] = v;
  }

  /** Nearest-rank percentile (0 < q ≤ 1); NaN when empty. */
  quantiles(...qs: number[]): number[] {
    const sorted = this.#a.slice(0, this.n).sort();
    return qs.map((q) =>
      sorted.length === 0
        ? Number.NaN
        : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!,
    );
  }
}

export interface RunResult {
  /** Grant + release pairs per second in the window. */
  opsPerS: number;
  p50Us: number;
  p99Us: number;
  /** Grants that failed (a refusal or a Redis error): must be 0 for the numbers to count. */
  failed: number;
  /** This process's CPU time (user + system) in the window per grant + release, µs. */
  cpuUsPerOp: number;
}

/** This process's CPU time over a window, read by timers at its start and end. */
function cpuMeter(warmMs: number, ms: number): () => number {
  let at0: NodeJS.CpuUsage | undefined;
  let used = Number.NaN;
  const t0 = setTimeout(() => {
    at0 = process.cpuUsage();
  }, warmMs);
  const t1 = setTimeout(() => {
    if (at0 === undefined) return;
    const d = process.cpuUsage(at0);
    used = d.user + d.system;
  }, warmMs + ms);
  return () => {
    clearTimeout(t0);
    clearTimeout(t1);
    // The window's end timer may not have run yet when the last caller stops (a late timer).
    if (Number.isNaN(used) && at0 !== undefined) {
      const d = process.cpuUsage(at0);
      used = d.user + d.system;
    }
    return used;
  };
}

/** `callers` closed-loop callers for `warmMs` + `ms`; only the window after the warm-up counts. */
export async function closedLoop(
  c: Contender,
  callers: number,
  warmMs: number,
  ms: number,
): Promise<RunResult> {
  const latency = new Samples();
  let ops = 0;
  let failed = 0;
  const cpu = cpuMeter(warmMs, ms);
  const start = now();
  const from = start + BigInt(warmMs * 1e6);
  const to = from + BigInt(ms * 1e6);
  const caller = async () => {
    for (;;) {
      const t0 = now();
      if (t0 >= to) return;
      let release: (() => unknown) | undefined;
      try {
        release = await c.acquire();
      } catch {
        failed++;
        continue;
      }
      const t1 = now();
      const r = release();
      if (r instanceof Promise) await r.catch(() => failed++);
      if (t0 >= from && t1 < to) {
        latency.push(Number(t1 - t0) / 1000);
        ops++;
      }
    }
  };
  await Promise.all(Array.from({ length: callers }, caller));
  const [p50, p99] = latency.quantiles(0.5, 0.99);
  return { opsPerS: ops / (ms / 1000), p50Us: p50!, p99Us: p99!, failed, cpuUsPerOp: cpu() / ops };
}

export interface PacedResult extends RunResult {
  /** The rate asked for. */
  targetPerS: number;
  /** Most grants outstanding at once (started, not yet granted). */
  maxOutstanding: number;
  /** The young generation's collections (scavenges) in the window: how many, and the longest pause. */
  scavenges: number;
  longestScavengeMs: number;
}

/**
 * The scavenges (V8's young-generation collections) from `fromMs` to `toMs` on the performance
 * clock: each stops the process, so a grant that arrives during one waits it out. They were most of
 * sluice's paced tail once (objects promoted per grant made each scavenge 4–10 ms).
 */
function scavengeMeter(): { read(fromMs: number, toMs: number): { count: number; longestMs: number } } {
  const seen: Array<[start: number, ms: number]> = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) seen.push([e.startTime, e.duration]);
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  return {
    read(fromMs, toMs) {
      observer.disconnect();
      const inWindow = seen.filter(([start]) => start >= fromMs && start < toMs);
      return { count: inWindow.length, longestMs: Math.max(0, ...inWindow.map(([, ms]) => ms)) };
    },
  };
}

/**
 * Grants started at `perS` a second for `warmMs` + `ms`, each released as soon as it is granted;
 * latency and the achieved rate over the window. Stops issuing if 10,000 grants are outstanding
 * (the contender cannot keep up), so a slow contender cannot take the machine down.
 */
export async function paced(c: Contender, perS: number, warmMs: number, ms: number): Promise<PacedResult> {
  const latency = new Samples();
  let ops = 0;
  let failed = 0;
  let issued = 0;
  let outstanding = 0;
  let maxOutstanding = 0;
  const cpu = cpuMeter(warmMs, ms);
  const scavenges = scavengeMeter();
  const startMs = performance.now();
  const start = now();
  const from = start + BigInt(warmMs * 1e6);
  const to = from + BigInt(ms * 1e6);
  const pending: Promise<void>[] = [];
  const one = async () => {
    const t0 = now();
    outstanding++;
    maxOutstanding = Math.max(maxOutstanding, outstanding);
    try {
      const release = await c.acquire();
      const t1 = now();
      outstanding--;
      const r = release();
      if (t0 >= from && t1 < to) {
        latency.push(Number(t1 - t0) / 1000);
        ops++;
      }
      if (r instanceof Promise) await r;
    } catch {
      outstanding--;
      failed++;
    }
  };
  await new Promise<void>((resolve) => {
    const tick = () => {
      const t = now();
      if (t >= to) return resolve();
      const due = Math.floor((Number(t - start) / 1e9) * perS);
      for (; issued < due && outstanding < 10_000; issued++) pending.push(one());
      setTimeout(tick, 1);
    };
    tick();
  });
  await Promise.all(pending);
  const gc = scavenges.read(startMs + warmMs, startMs + warmMs + ms);
  const [p50, p99] = latency.quantiles(0.5, 0.99);
  return {
    opsPerS: ops / (ms / 1000),
    p50Us: p50!,
    p99Us: p99!,
    failed,
    cpuUsPerOp: cpu() / ops,
    targetPerS: perS,
    maxOutstanding,
    scavenges: gc.count,
    longestScavengeMs: gc.longestMs,
  };
}
