/**
 * Refusals in the log as counts (issue 13). Under overload the gateway refuses thousands of
 * calls a second, and a pino line for each (serialised and written on the request path) cost
 * as much as the refusal itself. At `info` they are counted instead and written as one line a
 * second, `"msg": "refusals"`, with the counts by lane, reason, key and status; at `debug` every
 * refusal keeps its own `"request"` line (level debug). The metrics count every refusal either way.
 */
import type { Logger } from "pino";

/** Counts are written at most this often. */
export const REFUSAL_LOG_MS = 1000;

interface Count {
  lane: string | undefined;
  reason: string;
  key: string | undefined;
  status: number;
  count: number;
}

class Tally {
  readonly #log: Logger;
  readonly #counts = new Map<string, Count>();
  #total = 0;
  #since = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(log: Logger) {
    this.#log = log;
  }

  add(lane: string | undefined, reason: string, key: string | undefined, status: number): void {
    const id = `${lane}\u0000${reason}\u0000${key}\u0000${status}`;
    const c = this.#counts.get(id);
    if (c !== undefined) c.count++;
    else this.#counts.set(id, { lane, reason, key, status, count: 1 });
    this.#total++;
    if (this.#timer === null) {
      this.#since = performance.now();
      // unref'd: a quiet gateway has no timer, and counts never keep a process alive.
      this.#timer = setTimeout(() => this.flush(), REFUSAL_LOG_MS).unref();
    }
  }

  flush(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#total === 0) return;
    this.#log.info(
      {
        refusals: this.#total,
        ms: Math.round(performance.now() - this.#since),
        by: [...this.#counts.values()],
      },
      "refusals",
    );
    this.#counts.clear();
    this.#total = 0;
  }
}

const tallies = new WeakMap<Logger, Tally>();

/** Counts one refusal answered with `status`, for the next `"refusals"` line of `log`. */
export function countRefusal(
  log: Logger,
  lane: string | undefined,
  reason: string,
  key: string | undefined,
  status: number,
): void {
  let t = tallies.get(log);
  if (t === undefined) {
    t = new Tally(log);
    tallies.set(log, t);
  }
  t.add(lane, reason, key, status);
}

/** Writes what `log` has counted and not yet written (the gateway's close). */
export function flushRefusals(log: Logger): void {
  tallies.get(log)?.flush();
}
