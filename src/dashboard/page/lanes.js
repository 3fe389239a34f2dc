// @ts-check
/**
 * One card per lane: in flight against the limit and width, queued by class against the queue
 * limit, waits, and two charts (load over time; the 5-minute wait p50/p90 over time). Cards are
 * built once per set of lanes and then only their text and bar widths change.
 */
import { cssColor, LineChart } from "./charts.js";
import { el, field, secs, setAttr, setShare, setText } from "./dom.js";
import { Series } from "./history.js";

const LOAD = ["inflight", "limit", "width", "queued", "here"];
const WAIT = ["p50", "p90"];

class LaneCard {
  history = new Series();

  /**
   * @param {string} name
   * @param {boolean} fleet whether budgets are counted in a fleet store (the numbers are the fleet's)
   */
  constructor(name, fleet) {
    this.fleet = fleet;
    const id = `lane-${encodeURIComponent(name).replace(/[^A-Za-z0-9_-]/g, "_")}`;
    this.name = name;
    const num = (/** @type {string} */ label, /** @type {Node} */ value) =>
      el("div", {}, el("dt", {}, label), el("dd", {}, value));
    const span = (/** @type {string} */ f, /** @type {string} */ text = "0") =>
      el("span", { "data-field": f }, text);
    const frag = (/** @type {(Node | string)[]} */ ...parts) => {
      const f = document.createDocumentFragment();
      f.append(...parts);
      return f;
    };
    this.loadChart = el("div", {
      class: "chart",
      role: "img",
      "aria-label": `${name}: in flight, limit, width and queued over time`,
    });
    this.waitChart = el("div", {
      class: "chart",
      role: "img",
      "aria-label": `${name}: queue wait p50 and p90 over time`,
    });
    this.root = el(
      "article",
      { class: "lane", "data-lane": name, "aria-labelledby": id },
      el(
        "header",
        {},
        el("h3", { id }, name),
        el(
          "span",
          { class: "badges" },
          el(
            "span",
            {
              class: "badge degraded",
              "data-field": "degraded",
              "data-on": "false",
              title: "gateway_degraded: a pod tripped, paused or narrowed — the servers took capacity away",
            },
            "degraded",
          ),
          el("span", { class: "badge paused", "data-field": "paused", "data-on": "false" }, "paused"),
          el(
            "span",
            { class: "badge saturated", "data-field": "saturated", "data-on": "false" },
            "saturated",
          ),
        ),
      ),
      el(
        "dl",
        { class: "nums" },
        num("in flight / limit", frag(span("inflight"), " / ", span("limit"))),
        num("width · reserve", frag(span("width"), " · ", span("reserve"))),
        num("queued / limit", frag(span("queued"), " / ", span("queue_limit"))),
        num("oldest wait", span("oldest", "0.0 s")),
        num("wait p50 · p90", frag(span("p50", "0.0 s"), " · ", span("p90", "0.0 s"))),
        num("timeouts, 5 min", span("timeouts")),
      ),
      el(
        "div",
        { class: "meter" },
        el(
          "div",
          { class: "label" },
          el(
            "span",
            {},
            "in flight",
            el("span", { class: "share", "data-field": "share", "data-on": "false" }, ""),
          ),
          span("inflight-pct", "0 %"),
        ),
        el("div", { class: "bar" }, el("span", { class: "fill", "data-field": "inflight-bar" })),
      ),
      el(
        "div",
        { class: "meter" },
        el("div", { class: "label" }, el("span", {}, "queued by class"), span("queued-pct", "0 %")),
        el(
          "div",
          { class: "bar" },
          el("span", { class: "interactive", "data-field": "q-interactive-bar" }),
          el("span", { class: "default", "data-field": "q-default-bar" }),
          el("span", { class: "bulk", "data-field": "q-bulk-bar" }),
        ),
        el(
          "div",
          { class: "classes" },
          el("span", { class: "interactive" }, "interactive ", span("q-interactive")),
          el("span", { class: "default" }, "default ", span("q-default")),
          el("span", { class: "bulk" }, "bulk ", span("q-bulk")),
        ),
      ),
      el("p", { class: "chart-title" }, "in flight, limit, width and queued"),
      this.loadChart,
      el("p", { class: "chart-title" }, "queue wait p50 and p90 over the last 5 minutes (s)"),
      this.waitChart,
    );
  }

  /** Charts need the card in the document (their width is its width). */
  mount() {
    this.load = new LineChart(this.loadChart, {
      yLabel: "calls",
      height: 150,
      series: [
        { label: "in flight", color: cssColor("--c1") },
        { label: "limit", color: cssColor("--limit"), dash: [6, 4], width: 1.5 },
        { label: "width", color: cssColor("--c3"), dash: [2, 3], width: 1.5 },
        { label: "queued", color: cssColor("--c2") },
        // Fleet mode only: the chart's "in flight" is the fleet's, and this is this replica's part.
        ...(this.fleet ? [{ label: "this replica", color: cssColor("--c4"), width: 1.5 }] : []),
      ],
    });
    this.wait = new LineChart(this.waitChart, {
      yLabel: "s",
      height: 150,
      decimals: 1,
      series: [
        { label: "p50", color: cssColor("--c1") },
        { label: "p90", color: cssColor("--c2") },
      ],
    });
  }

  /** @param {any} lane a LaneSnapshot @param {number} t */
  update(lane, t) {
    const r = this.root;
    const q = lane.queued_by_priority;
    // With a fleet store the lane's numbers are the fleet's; `inflight` is this replica's share.
    const fleet = lane.fleet_inflight ?? lane.inflight;
    const share = field(r, "share");
    setAttr(share, "data-on", String(this.fleet));
    setText(share, this.fleet ? ` (fleet) · this replica ${lane.inflight}` : "");
    setText(field(r, "inflight"), String(fleet));
    setText(field(r, "limit"), String(lane.limit));
    setText(field(r, "width"), String(lane.width));
    setText(field(r, "reserve"), String(lane.reserve));
    setText(field(r, "queued"), String(lane.queued));
    setText(field(r, "queue_limit"), String(lane.queue_limit));
    setText(field(r, "oldest"), secs(lane.oldest_wait_s));
    setText(field(r, "p50"), secs(lane.wait_p50_s_5m));
    setText(field(r, "p90"), secs(lane.wait_p90_s_5m));
    setText(field(r, "timeouts"), String(lane.queue_timeouts_5m));
    setText(field(r, "q-interactive"), String(q.interactive));
    setText(field(r, "q-default"), String(q.default));
    setText(field(r, "q-bulk"), String(q.bulk));
    const pct = (/** @type {number} */ n, /** @type {number} */ of) =>
      `${of > 0 ? Math.round((n / of) * 100) : 0} %`;
    setText(field(r, "inflight-pct"), pct(fleet, lane.limit));
    setText(field(r, "queued-pct"), pct(lane.queued, lane.queue_limit));
    setShare(field(r, "inflight-bar"), fleet, lane.limit);
    for (const c of ["interactive", "default", "bulk"])
      setShare(field(r, `q-${c}-bar`), q[c], lane.queue_limit);
    const paused = field(r, "paused");
    setAttr(paused, "data-on", String(lane.paused_s > 0));
    setText(paused, lane.paused_s > 0 ? `paused ${secs(lane.paused_s)}` : "paused");
    setAttr(field(r, "saturated"), "data-on", String(lane.saturated));
    // Seed 002's second state: waits that are the servers' doing, not this lane's own queue.
    setAttr(field(r, "degraded"), "data-on", String(lane.state === "gateway_degraded"));
    setAttr(r, "data-state", lane.state ?? "ok");
    setAttr(r, "data-queued", String(lane.queued));
    this.history.push(t, {
      inflight: fleet,
      here: this.fleet ? lane.inflight : null,
      limit: lane.limit,
      width: lane.width,
      queued: lane.queued,
      p50: lane.wait_p50_s_5m,
      p90: lane.wait_p90_s_5m,
    });
  }

  /** @param {number} seconds @param {number} now */
  draw(seconds, now) {
    const from = now - seconds;
    const load = this.fleet ? LOAD : LOAD.slice(0, -1);
    this.load?.update(/** @type {uPlot.AlignedData} */ (this.history.window(load, seconds, now)), from, now);
    this.wait?.update(/** @type {uPlot.AlignedData} */ (this.history.window(WAIT, seconds, now)), from, now);
  }

  destroy() {
    this.load?.destroy();
    this.wait?.destroy();
    this.root.remove();
  }
}

export class LaneCards {
  /** @type {Map<string, LaneCard>} */
  #cards = new Map();
  #fleet = false;

  /** @param {HTMLElement} container */
  constructor(container) {
    this.container = container;
  }

  /** @param {any[]} lanes LaneSnapshot[] @param {number} t @param {boolean} fleet */
  update(lanes, t, fleet) {
    const names = lanes.map((l) => l.lane);
    if (fleet !== this.#fleet) {
      // A reload cannot change the store, but a reconnect may reach another gateway: start over.
      for (const card of this.#cards.values()) card.destroy();
      this.#cards.clear();
      this.#fleet = fleet;
    }
    if (names.join("\n") !== [...this.#cards.keys()].join("\n")) this.#rebuild(names);
    for (const lane of lanes) this.#cards.get(lane.lane)?.update(lane, t);
  }

  /** @param {number} t */
  gap(t) {
    for (const card of this.#cards.values()) card.history.gap(t);
  }

  /** @param {number} seconds @param {number} now */
  draw(seconds, now) {
    for (const card of this.#cards.values()) card.draw(seconds, now);
  }

  /** The set of lanes changed (a reload): keep the cards that stay, with their history. @param {string[]} names */
  #rebuild(names) {
    for (const [name, card] of this.#cards) if (!names.includes(name)) card.destroy();
    const next = new Map();
    const fresh = [];
    for (const name of names) {
      const card = this.#cards.get(name) ?? new LaneCard(name, this.#fleet);
      if (!this.#cards.has(name)) fresh.push(card);
      next.set(name, card);
    }
    this.#cards = next;
    if (names.length === 0)
      this.container.replaceChildren(el("p", { class: "muted" }, "no lanes configured"));
    else this.container.replaceChildren(...[...next.values()].map((c) => c.root));
    for (const card of fresh) card.mount();
  }
}
