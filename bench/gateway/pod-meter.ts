/**
 * How busy the bench's simulated pods were (main.ts, wrk-storm.ts): the exact time-integral of
 * their running calls over a window, and their event loop's lateness.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { SimServer } from "../../src/sim/server.js";

/** The part of a sim's scheduler the meter wraps (the sim object has it; `SimServer` does not say so). */
interface SeqCounter {
  running: number;
  admit: (...args: never[]) => unknown;
  end: (...args: never[]) => unknown;
  pump: (...args: never[]) => unknown;
}

/**
 * How busy the pods were, exactly: every call that can change a pod's `running` (its scheduler's
 * `admit`, `end`, `pump`) is wrapped on the instance, so the time-integral of `running` is summed
 * as it happens. Sampling on a timer would be biased: a late timer tick runs right after the
 * due job timers freed their slots and before the I/O that refills them.
 */
export class PodMeter {
  readonly #area: number[];
  readonly #ticks: (() => void)[] = [];
  readonly #last: number[];
  #from = 0;
  /** Timer lateness in this process (the pods' event loop) during the window. */
  readonly #lag = monitorEventLoopDelay({ resolution: 1 });

  constructor(readonly pods: SimServer[]) {
    this.#area = pods.map(() => 0);
    this.#last = pods.map(() => performance.now());
    pods.forEach((pod, i) => {
      const s = (pod as unknown as { scheduler: SeqCounter }).scheduler;
      const tick = () => {
        const now = performance.now();
        this.#area[i]! += s.running * (now - this.#last[i]!);
        this.#last[i] = now;
      };
      for (const m of ["admit", "end", "pump"] as const) {
        const original = s[m].bind(s) as (...args: unknown[]) => unknown;
        s[m] = ((...args: unknown[]) => {
          tick();
          const r = original(...args);
          tick();
          return r;
        }) as SeqCounter[typeof m];
      }
      this.#ticks.push(tick);
    });
  }

  start(): void {
    for (const p of this.pods) p.resetStats();
    for (const t of this.#ticks) t();
    this.#area.fill(0);
    this.#from = performance.now();
    this.#lag.reset();
    this.#lag.enable();
  }

  stop(): {
    busy: number;
    maxRunning: number;
    maxWaiting: number;
    podCompleted: number;
    podAborted: number;
    podLagP99: number;
  } {
    for (const t of this.#ticks) t();
    const ms = performance.now() - this.#from;
    this.#lag.disable();
    const podLagP99 = this.#lag.count > 0 ? this.#lag.percentile(99) / 1e6 : Number.NaN;
    const stats = this.pods.map((p) => p.stats());
    const slots = this.pods.reduce((a, p) => a + p.options.maxNumSeqs, 0);
    return {
      busy: slots === 0 ? Number.NaN : this.#area.reduce((a, b) => a + b, 0) / (slots * ms),
      maxRunning: Math.max(...stats.map((s) => s.maxRunningSeen)),
      maxWaiting: Math.max(...stats.map((s) => s.maxWaitingSeen)),
      podCompleted: stats.reduce((a, s) => a + s.completed, 0),
      podAborted: stats.reduce((a, s) => a + s.aborted, 0),
      podLagP99,
    };
  }
}
