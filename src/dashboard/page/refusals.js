// @ts-check
/**
 * Refusals per minute by code. The snapshot carries no refusal counts, so this reads them where
 * they are counted: `sluice_refusals_total{lane, reason}` on `/metrics`, polled every 2 s. The
 * number shown at a moment is what was refused in the minute before it (or since the page
 * opened, while that is less than a minute, and said so).
 */

/**
 * The capacity codes charted one by one (DESIGN §3.2); every other reason is "bad input". A copy
 * of `CAPACITY_REFUSAL_CODES` (src/core/errors.ts): the page is served as written and imports no
 * TypeScript; test/dashboard/refusal-counts.test.ts holds the two equal.
 */
export const CODES = [
  "queue_full",
  "key_limit",
  "rate_limit",
  "quota_paused",
  "queue_timeout",
  "upstream_unavailable",
  "store_unavailable",
  "draining",
];
export const OTHER = "bad input";

const POLL_MS = 2000;
const MINUTE_S = 60;

/**
 * Totals by reason (summed over lanes) from Prometheus text.
 * @param {string} text
 * @returns {Map<string, number>}
 */
export function parseRefusals(text) {
  /** @type {Map<string, number>} */
  const totals = new Map();
  for (const line of text.split("\n")) {
    if (!line.startsWith("sluice_refusals_total{")) continue;
    const close = line.lastIndexOf("}");
    const reason = /(?:^|[{,])reason="((?:[^"\\]|\\.)*)"/.exec(line.slice(0, close + 1))?.[1];
    const value = Number(
      line
        .slice(close + 1)
        .trim()
        .split(" ")[0],
    );
    if (reason === undefined || !Number.isFinite(value)) continue;
    const key = CODES.includes(reason) ? reason : OTHER;
    totals.set(key, (totals.get(key) ?? 0) + value);
  }
  return totals;
}

/**
 * @typedef {{ t: number, totals: Map<string, number> }} Sample
 * @typedef {{ t: number, span: number, perMinute: Map<string, number> }} Rates
 */

export class RefusalRates {
  /** @type {Sample[]} */
  #samples = [];
  /** @type {ReturnType<typeof setInterval> | undefined} */
  #timer;

  /**
   * @param {(rates: Rates) => void} onRates
   * @param {(problem: string) => void} onProblem
   */
  constructor(onRates, onProblem) {
    this.onRates = onRates;
    this.onProblem = onProblem;
  }

  start() {
    void this.poll();
    this.#timer = setInterval(() => void this.poll(), POLL_MS);
  }

  stop() {
    clearInterval(this.#timer);
  }

  async poll() {
    let text;
    try {
      const res = await fetch("/metrics", { cache: "no-store" });
      if (!res.ok) {
        this.onProblem(`/metrics answered ${res.status}`);
        return;
      }
      text = await res.text();
    } catch {
      this.onProblem("/metrics is unreachable");
      return;
    }
    this.add(Date.now() / 1000, parseRefusals(text));
  }

  /**
   * Adds a sample and reports the rates it gives.
   * @param {number} t unix seconds
   * @param {Map<string, number>} totals
   */
  add(t, totals) {
    const last = this.#samples.at(-1);
    // A counter that went down is a restarted gateway: its history says nothing about this one.
    if (last && [...totals].some(([code, n]) => n < (last.totals.get(code) ?? 0))) this.#samples = [];
    this.#samples.push({ t, totals });
    while (this.#samples.length > 2 && /** @type {Sample} */ (this.#samples[1]).t <= t - MINUTE_S) {
      this.#samples.shift();
    }
    const base = /** @type {Sample} */ (this.#samples[0]);
    /** @type {Map<string, number>} */
    const perMinute = new Map();
    for (const code of [...CODES, OTHER]) {
      perMinute.set(code, (totals.get(code) ?? 0) - (base.totals.get(code) ?? 0));
    }
    this.onRates({ t, span: t - base.t, perMinute });
  }
}
