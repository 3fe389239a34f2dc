// @ts-check
/**
 * Line charts over uPlot (served by the gateway as /dashboard/uplot.js, the global `uPlot`): a
 * fixed height, the container's width (followed as it resizes), colours from the page's CSS, and
 * a legend whose entries are keyboard toggles.
 */

/**
 * @typedef {{ label: string, color: string, dash?: number[], width?: number, fill?: boolean }} SeriesSpec
 * @typedef {{ series: SeriesSpec[], yLabel: string, height: number, decimals?: number, legend?: boolean }} ChartSpec
 */

/** Tick steps for counts: whole numbers only (a chart of calls never shows 0.25). */
const WHOLE = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10_000, 50_000, 100_000];

/** A CSS custom property of the page (`--c1` …), for canvas colours. @param {string} name */
export function cssColor(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
}

export class LineChart {
  /** @type {uPlot} */
  #plot;
  #height;
  /** The x range shown (unix seconds): the chosen history window, whatever the data covers. */
  #x = [0, 1];

  /**
   * @param {HTMLElement} target
   * @param {ChartSpec} spec
   */
  constructor(target, spec) {
    this.#height = spec.height;
    const axis = {
      stroke: cssColor("--muted"),
      grid: { stroke: cssColor("--grid"), width: 1 },
      ticks: { stroke: cssColor("--grid"), width: 1 },
      font: "12px system-ui, sans-serif",
    };
    const decimals = spec.decimals ?? 0;
    /** @type {uPlot.Options} */
    const options = {
      width: Math.max(200, target.clientWidth),
      height: spec.height,
      legend: { show: spec.legend ?? true, live: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: {
        x: { time: true, range: () => [this.#x[0] ?? 0, this.#x[1] ?? 1] },
        y: { range: (_u, _min, max) => [0, Math.max(1, (max ?? 0) * 1.1)] },
      },
      axes: [
        { ...axis, space: 60 },
        {
          ...axis,
          label: spec.yLabel,
          labelFont: "12px system-ui, sans-serif",
          labelSize: 18,
          size: 48,
          values: (_u, ticks) => ticks.map((v) => v.toFixed(decimals)),
          ...(decimals === 0 ? { incrs: WHOLE } : {}),
        },
      ],
      series: [
        {},
        ...spec.series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: s.width ?? 2,
          ...(s.dash ? { dash: s.dash } : {}),
          ...(s.fill ? { fill: `${s.color}22` } : {}),
          spanGaps: false,
          points: { show: false },
        })),
      ],
    };
    this.#plot = new uPlot(options, [[], ...spec.series.map(() => [])], target);
    keyboardLegend(this.#plot);
    new ResizeObserver(() => {
      const width = Math.max(200, target.clientWidth);
      if (width !== this.#plot.width) this.#plot.setSize({ width, height: this.#height });
    }).observe(target);
  }

  /**
   * Draws `data` over the x range [from, to] (unix seconds), or from its first point while it
   * covers less than that (at least the last 30 s): a page opened a minute ago fills its charts
   * instead of drawing in their last fifth.
   * @param {uPlot.AlignedData} data
   * @param {number} from
   * @param {number} to
   */
  update(data, from, to) {
    const first = data[0][0] ?? from;
    this.#x = [Math.max(from, Math.min(first, to - 30)), to];
    this.#plot.setData(data);
  }

  /** Shows or hides series `i` (0-based, as in the spec). @param {number} i @param {boolean} show */
  toggle(i, show) {
    this.#plot.setSeries(i + 1, { show });
  }

  destroy() {
    this.#plot.destroy();
  }
}

/**
 * uPlot's legend rows toggle a series on click; make each one a focusable button that Enter or
 * Space toggles too, and that says whether its series is shown.
 * @param {uPlot} plot
 */
function keyboardLegend(plot) {
  const rows = plot.root.querySelectorAll(".u-legend .u-series");
  rows.forEach((row, i) => {
    if (i === 0) return; // the x series (time) has no toggle
    const sync = () => row.setAttribute("aria-pressed", String(plot.series[i]?.show !== false));
    row.setAttribute("tabindex", "0");
    row.setAttribute("role", "button");
    sync();
    row.addEventListener("keydown", (event) => {
      const key = /** @type {KeyboardEvent} */ (event).key;
      if (key !== "Enter" && key !== " ") return;
      event.preventDefault();
      plot.setSeries(i, { show: plot.series[i]?.show === false });
      sync();
    });
    row.addEventListener("click", () => queueMicrotask(sync));
  });
}
