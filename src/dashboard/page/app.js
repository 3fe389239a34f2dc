// @ts-check
/**
 * The dashboard: snapshots from the telemetry stream into the lane cards, the pod view and the
 * tables; refusal counts from /metrics into their chart; the connection's state into the header.
 * Charts are drawn at most once per animation frame.
 */
import { cssColor, LineChart } from "./charts.js";
import { el, setAttr, setText } from "./dom.js";
import { Series } from "./history.js";
import { LaneCards } from "./lanes.js";
import { PodView } from "./pods.js";
import { CODES, OTHER, RefusalRates } from "./refusals.js";
import { gpuGroups } from "./series-style.js";
import { TelemetryStream } from "./stream.js";
import {
  accountTable,
  groupTable,
  keyTable,
  laneFlows,
  renderAdmission,
  renderStore,
  shareTable,
  tenantTable,
} from "./tables.js";

/** @param {string} id */
const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
/** @param {string} id */
const tbodyOf = (id) => /** @type {HTMLTableElement} */ (byId(id)).tBodies[0];

const lanes = new LaneCards(byId("lane-cards"));
const pods = new PodView(byId("pods-chart"), tbodyOf("pod-table"));
const groups = groupTable(tbodyOf("group-table"));
const accounts = accountTable(tbodyOf("account-table"));
const keys = keyTable(tbodyOf("key-table"));
const tenants = tenantTable(tbodyOf("tenant-table"));
const shares = shareTable(tbodyOf("share-table"));
const windowSelect = /** @type {HTMLSelectElement} */ (byId("window"));
let windowSeconds = Number(windowSelect.value);

// Refusals per minute: one series per capacity code, the rest together.
const refusalCodes = [...CODES, OTHER];
const refusalHistory = new Series();
const refusalColors = ["--c2", "--c4", "--c6", "--c3", "--c1", "--c5", "--c7", "--c8", "--limit"];
const refusalChart = new LineChart(byId("refusals-chart"), {
  yLabel: "per min",
  height: 200,
  legend: false,
  series: refusalCodes.map((code, i) => ({ label: code, color: cssColor(refusalColors[i] ?? "--c1") })),
});
// The list below the chart is its legend: each code with its colour and its count now, on a
// button that shows or hides its line.
const codeList = byId("refusal-codes");
codeList.replaceChildren(
  ...refusalCodes.map((code, i) => {
    const swatch = el("span", { class: "swatch", "aria-hidden": "true" });
    swatch.style.background = cssColor(refusalColors[i] ?? "--c1");
    const toggle = el("button", { type: "button", class: "code", "aria-pressed": "true" }, swatch, code);
    toggle.addEventListener("click", () => {
      const show = toggle.getAttribute("aria-pressed") !== "true";
      toggle.setAttribute("aria-pressed", String(show));
      refusalChart.toggle(i, show);
    });
    return el("li", { "data-code": code, "data-zero": "true" }, toggle, el("span", { class: "n" }, "–"));
  }),
);
const rates = new RefusalRates(
  ({ t, span, perMinute }) => {
    refusalHistory.push(t, Object.fromEntries(perMinute));
    for (const [code, n] of perMinute) {
      const li = codeList.querySelector(`[data-code="${code}"]`);
      setText(li?.querySelector(".n"), String(n));
      setAttr(li, "data-zero", String(n === 0));
    }
    setText(
      byId("refusals-note"),
      span >= 59
        ? "refused in the minute before each point, by code (sluice_refusals_total on /metrics)"
        : `refused since the page opened ${Math.round(span)} s ago, by code (a full minute from then on; sluice_refusals_total on /metrics)`,
    );
    scheduleDraw();
  },
  (problem) => setText(byId("refusals-note"), `refusal counts unavailable: ${problem}`),
);

let drawPending = false;
function scheduleDraw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => {
    drawPending = false;
    const now = Date.now() / 1000;
    lanes.draw(windowSeconds, now);
    pods.draw(windowSeconds, now);
    const data = /** @type {uPlot.AlignedData} */ (refusalHistory.window(refusalCodes, windowSeconds, now));
    refusalChart.update(data, now - windowSeconds, now);
  });
}

/** @param {any} s a Snapshot */
function onSnapshot(s) {
  const t = Date.now() / 1000;
  setText(byId("replica"), s.replica);
  const fleet = s.store !== undefined && s.store.mode !== "memory";
  renderStore(byId("store"), s.store);
  lanes.update(s.lanes, t, fleet);
  pods.update(s.pods, t);
  groups.update(gpuGroups(s.groups ?? [], s.admission));
  accounts.update(s.accounts ?? []);
  keys.update(s.keys ?? []);
  tenants.update(s.tenants ?? []);
  shares.update(laneFlows(s.lanes ?? []));
  renderAdmission(byId("admission"), s.admission);
  scheduleDraw();
}

const conn = byId("conn");
const reconnect = /** @type {HTMLButtonElement} */ (byId("reconnect"));

/** @param {import("./stream.js").StreamStatus} status */
function describe(status) {
  switch (status.state) {
    case "live":
      return "live: a snapshot every second";
    case "connecting":
      return "connecting to the telemetry stream…";
    case "stale":
      return `stalled: ${status.detail}; the numbers below are not current`;
    case "down": {
      const left = status.retryAt === null ? 0 : Math.max(0, Math.ceil((status.retryAt - Date.now()) / 1000));
      return `stream lost: ${status.detail}; reconnecting in ${left} s (numbers below are from before)`;
    }
  }
}

/** @param {import("./stream.js").StreamStatus} status */
function onStatus(status) {
  setAttr(conn, "data-state", status.state);
  setAttr(conn, "data-drops", String(status.drops));
  setText(byId("conn-text"), describe(status));
  setAttr(byId("main"), "data-stale", String(status.state !== "live"));
  reconnect.disabled = status.state !== "down";
  document.title = status.state === "live" ? "sluice" : `sluice (${status.state})`;
  if (status.state === "down") {
    const t = Date.now() / 1000;
    lanes.gap(t);
    pods.history.gap(t);
    refusalHistory.gap(t);
  }
}

const stream = new TelemetryStream("/api/telemetry/stream", onSnapshot, onStatus);
reconnect.addEventListener("click", () => stream.connect());
windowSelect.addEventListener("change", () => {
  windowSeconds = Number(windowSelect.value);
  scheduleDraw();
});
// The reconnect countdown ticks while the stream is down.
setInterval(() => {
  if (stream.status.state === "down") setText(byId("conn-text"), describe(stream.status));
}, 1000);
stream.connect();
rates.start();
