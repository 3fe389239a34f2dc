// @ts-check
/**
 * Time series kept in the page, in the column layout uPlot draws (one x array, one array per
 * series). A `null` point is a gap: one is added when the stream drops, so the lines break there
 * instead of drawing a straight line over time nobody saw.
 */

/** Points kept per series: 15 minutes at one a second. */
export const MAX_POINTS = 900;

export class Series {
  /** @type {number[]} unix seconds */
  x = [];
  /** @type {Map<string, (number | null)[]>} */
  ys = new Map();
  /** The last point is a gap. */
  #gapped = false;

  /**
   * Appends one point: `values` by series name; a series missing from it gets a gap.
   * @param {number} t
   * @param {Record<string, number | null>} values
   */
  push(t, values) {
    this.#gapped = false;
    for (const name of Object.keys(values)) {
      if (!this.ys.has(name))
        this.ys.set(
          name,
          this.x.map(() => null),
        );
    }
    this.x.push(t);
    for (const [name, ys] of this.ys) ys.push(values[name] ?? null);
    if (this.x.length > MAX_POINTS) {
      this.x.shift();
      for (const ys of this.ys.values()) ys.shift();
    }
  }

  /** A gap at `t` in every series (one, however long the stream stays down). @param {number} t */
  gap(t) {
    if (this.x.length === 0 || this.#gapped) return;
    this.push(t, {});
    this.#gapped = true;
  }

  /**
   * The last `seconds` of the given series, as uPlot's aligned data.
   * @param {string[]} names
   * @param {number} seconds
   * @param {number} now
   * @returns {[number[], ...(number | null)[][]]}
   */
  window(names, seconds, now) {
    let from = 0;
    while (from < this.x.length && /** @type {number} */ (this.x[from]) < now - seconds) from++;
    return [this.x.slice(from), ...names.map((n) => (this.ys.get(n) ?? []).slice(from))];
  }
}
