// @ts-check
/**
 * Pods: a row each (width against ceiling, in flight, breaker state as colour and word, trips,
 * reopen countdown, pause) and one chart of every pod's width over time, where an AIMD cut and
 * the walk back up show as a step down and a staircase. Each pod's line has its own dash and
 * stroke width (equal widths would otherwise hide one line under another), and its legend entry
 * toggles it.
 */
import { cssColor, LineChart } from "./charts.js";
import { el, field, secs, setAttr, setShare, setText } from "./dom.js";
import { Series } from "./history.js";
import { podStroke } from "./series-style.js";

const PALETTE = ["--c1", "--c2", "--c3", "--c4", "--c5", "--c6", "--c7", "--c8"];

/** A pod URL without its scheme, for narrow cells (the full URL is the cell's title). @param {string} id */
const short = (id) => id.replace(/^https?:\/\//, "");

export class PodView {
  history = new Series();
  /** @type {LineChart | undefined} */
  #chart;
  /** @type {string[]} */
  #ids = [];
  /** @type {Map<string, HTMLTableRowElement>} */
  #rows = new Map();

  /**
   * @param {HTMLElement} chartTarget
   * @param {HTMLTableSectionElement} tbody
   */
  constructor(chartTarget, tbody) {
    this.chartTarget = chartTarget;
    this.tbody = tbody;
  }

  /** @param {any[]} pods PodSnapshot[] @param {number} t */
  update(pods, t) {
    const ids = pods.map((p) => p.id);
    if (ids.join("\n") !== this.#ids.join("\n")) this.#rebuild(ids);
    /** @type {Record<string, number>} */
    const widths = {};
    for (const pod of pods) {
      const row = this.#rows.get(pod.id);
      if (!row) continue;
      setText(field(row, "lanes"), pod.lanes.join(", "));
      setText(field(row, "width"), `${pod.width} / ${pod.ceiling}`);
      setShare(field(row, "width-bar"), pod.width, pod.ceiling);
      // With a fleet store, every replica's calls on the pod; this replica's in brackets.
      const fleet = pod.fleet_inflight;
      setText(
        field(row, "inflight"),
        fleet === undefined ? String(pod.inflight) : `${fleet} (${pod.inflight} here)`,
      );
      const breaker = field(row, "breaker");
      setAttr(breaker, "data-state", pod.breaker);
      setText(breaker, pod.breaker.replace("_", "-"));
      setAttr(row, "data-breaker", pod.breaker);
      setText(field(row, "trips"), String(pod.trips));
      setText(field(row, "reopens"), pod.reopens_in_s > 0 ? secs(pod.reopens_in_s) : "–");
      setText(field(row, "paused"), pod.paused_s > 0 ? secs(pod.paused_s) : "–");
      widths[pod.id] = pod.width;
    }
    this.history.push(t, widths);
  }

  /** @param {number} seconds @param {number} now */
  draw(seconds, now) {
    const data = /** @type {uPlot.AlignedData} */ (this.history.window(this.#ids, seconds, now));
    this.#chart?.update(data, now - seconds, now);
  }

  /** @param {string[]} ids */
  #rebuild(ids) {
    this.#ids = ids;
    this.#rows.clear();
    const rows = ids.map((id, i) => {
      const color = PALETTE[i % PALETTE.length];
      const row = /** @type {HTMLTableRowElement} */ (
        el(
          "tr",
          { "data-pod": id, "data-breaker": "closed" },
          el(
            "td",
            { class: "pod", title: id },
            el("span", { class: `swatch s${i % PALETTE.length}` }),
            short(id),
          ),
          el("td", { "data-field": "lanes" }),
          el(
            "td",
            { class: "num" },
            el("span", { "data-field": "width" }, "0 / 0"),
            el("div", { class: "bar" }, el("span", { class: "fill", "data-field": "width-bar" })),
          ),
          el("td", { class: "num", "data-field": "inflight" }, "0"),
          el(
            "td",
            {},
            el("span", { class: "breaker", "data-field": "breaker", "data-state": "closed" }, "closed"),
          ),
          el("td", { class: "num", "data-field": "trips" }, "0"),
          el("td", { class: "num", "data-field": "reopens" }, "–"),
          el("td", { class: "num", "data-field": "paused" }, "–"),
        )
      );
      const swatch = row.querySelector(".swatch");
      if (swatch instanceof HTMLElement) swatch.style.background = cssColor(color ?? "--c1");
      this.#rows.set(id, row);
      return row;
    });
    this.tbody.replaceChildren(
      ...(rows.length > 0 ? rows : [el("tr", { class: "empty" }, el("td", { colspan: "8" }, "no pods"))]),
    );
    this.#chart?.destroy();
    this.#chart = new LineChart(this.chartTarget, {
      yLabel: "width",
      height: 180,
      series: ids.map((id, i) => ({
        label: short(id),
        color: cssColor(PALETTE[i % PALETTE.length] ?? "--c1"),
        ...podStroke(i, ids.length),
      })),
    });
  }
}
