// @ts-check
/**
 * The gateway-wide admission bound and the tables of GPU groups, accounts, client keys, tenants and
 * their parts of each lane. Rows
 * are built when the set of names changes (a reload) and otherwise only their text changes.
 */
import { count, el, field, secs, setShare, setText } from "./dom.js";

/**
 * A table body kept in step with a list of named entries.
 * @template T
 */
export class KeyedTable {
  /** @type {string[]} */
  #names = [];
  /** @type {Map<string, HTMLTableRowElement>} */
  #rows = new Map();

  /**
   * @param {HTMLTableSectionElement} tbody
   * @param {(entry: T) => string} nameOf
   * @param {(name: string) => HTMLTableRowElement} build
   * @param {(row: HTMLTableRowElement, entry: T) => void} fill
   * @param {string} empty the row's text when there are none
   */
  constructor(tbody, nameOf, build, fill, empty) {
    this.tbody = tbody;
    this.nameOf = nameOf;
    this.build = build;
    this.fill = fill;
    this.empty = empty;
  }

  /** @param {T[]} entries */
  update(entries) {
    const names = entries.map(this.nameOf);
    if (names.join("\n") !== this.#names.join("\n") || this.#rows.size === 0) {
      this.#names = names;
      this.#rows = new Map(names.map((n) => [n, this.build(n)]));
      const columns = this.tbody.closest("table")?.querySelectorAll("thead th").length ?? 1;
      this.tbody.replaceChildren(
        ...(names.length > 0
          ? this.#rows.values()
          : [el("tr", { class: "empty" }, el("td", { colspan: String(columns) }, this.empty))]),
      );
    }
    for (const entry of entries) {
      const row = this.#rows.get(this.nameOf(entry));
      if (row) this.fill(row, entry);
    }
  }
}

/** A `<td>` for a field. @param {string} name @param {string} [cls] */
const td = (name, cls = "num") => el("td", { class: cls, "data-field": name }, "–");

/** @param {HTMLTableSectionElement} tbody */
export function groupTable(tbody) {
  return new KeyedTable(
    tbody,
    (/** @type {any} */ g) => g.group,
    (name) =>
      /** @type {HTMLTableRowElement} */ (
        el(
          "tr",
          { "data-group": name },
          el("td", {}, name),
          td("use"),
          el("td", {}, el("div", { class: "bar" }, el("span", { class: "fill", "data-field": "bar" }))),
        )
      ),
    (row, /** @type {any} */ g) => {
      setText(field(row, "use"), `${g.inflight} / ${g.limit}`);
      setShare(field(row, "bar"), g.inflight, g.limit);
    },
    "no GPU groups configured",
  );
}

/** A bucket's use in the last minute against its rate. @param {any} b */
const bucket = (b) => (b ? `${b.used_1m} / ${b.per_minute}` : "–");

/** @param {HTMLTableSectionElement} tbody */
export function accountTable(tbody) {
  return new KeyedTable(
    tbody,
    (/** @type {any} */ a) => a.account,
    (name) =>
      /** @type {HTMLTableRowElement} */ (
        el(
          "tr",
          { "data-account": name },
          el("td", {}, name),
          td("lanes", ""),
          td("inflight"),
          td("tokens"),
          td("requests"),
          td("throttled"),
          td("paused"),
        )
      ),
    (row, /** @type {any} */ a) => {
      setText(field(row, "lanes"), a.lanes.join(", "));
      const cap = a.max_inflight === null ? "–" : `${count(a.adaptive_cap)} (max ${a.max_inflight})`;
      setText(field(row, "inflight"), `${a.inflight} / ${cap}`);
      setText(field(row, "tokens"), bucket(a.tokens));
      setText(field(row, "requests"), bucket(a.requests));
      setText(field(row, "throttled"), String(a.throttled_1m));
      setText(field(row, "paused"), a.quota_paused_s > 0 ? secs(a.quota_paused_s) : "–");
    },
    "no accounts configured",
  );
}

/** @param {HTMLTableSectionElement} tbody */
export function keyTable(tbody) {
  return new KeyedTable(
    tbody,
    (/** @type {any} */ k) => k.key,
    (name) =>
      /** @type {HTMLTableRowElement} */ (
        el(
          "tr",
          { "data-key": name },
          el("td", {}, name),
          td("tenant", ""),
          td("inflight"),
          td("queued"),
          td("tokens"),
          td("requests"),
        )
      ),
    (row, /** @type {any} */ k) => {
      setText(field(row, "tenant"), k.tenant ?? "–");
      // A key without max_inflight is unbounded (the snapshot says so with the largest safe integer).
      const max = k.max_inflight >= Number.MAX_SAFE_INTEGER ? "–" : k.max_inflight;
      setText(field(row, "inflight"), `${k.inflight} / ${max}`);
      setText(field(row, "queued"), String(k.queued));
      // The key's own tpm / rpm: tokens and requests charged in the last minute against the rate.
      setText(field(row, "tokens"), bucket(k.tokens));
      setText(field(row, "requests"), bucket(k.requests));
    },
    "no client keys configured (open mode)",
  );
}

/** Tenants (`snapshot.tenants`): keys sharing one budget, their calls summed. @param {HTMLTableSectionElement} tbody */
export function tenantTable(tbody) {
  return new KeyedTable(
    tbody,
    (/** @type {any} */ t) => t.tenant,
    (name) =>
      /** @type {HTMLTableRowElement} */ (
        el(
          "tr",
          { "data-tenant": name },
          el("td", {}, name),
          td("keys", ""),
          td("inflight"),
          td("queued"),
          td("tokens"),
          td("requests"),
        )
      ),
    (row, /** @type {any} */ t) => {
      setText(field(row, "keys"), t.keys.join(", "));
      setText(field(row, "inflight"), String(t.inflight));
      setText(field(row, "queued"), String(t.queued));
      setText(field(row, "tokens"), bucket(t.tokens));
      setText(field(row, "requests"), bucket(t.requests));
    },
    "no tenants configured",
  );
}

/** A 0..1 fraction as a whole percent. @param {number} x */
const pct = (x) => `${Math.round(x * 100)} %`;

/**
 * Each key's (tenant's) part of each lane (`snapshot.lanes[].flows`), one row per lane and flow
 * while a configured key waits or runs there: its calls in flight and queued, its weight, its
 * configured share of the active flows, and the part of the lane's calls it holds — a bar, with a
 * mark at its share, so a flow holding more than its share (because the others ask for less)
 * shows at a glance.
 * @param {HTMLTableSectionElement} tbody
 */
export function shareTable(tbody) {
  return new KeyedTable(
    tbody,
    (/** @type {any} */ f) => `${f.lane}\t${f.flow}`,
    (name) => {
      const [lane = "", flow = ""] = name.split("\t");
      return /** @type {HTMLTableRowElement} */ (
        el(
          "tr",
          { "data-share-lane": lane, "data-flow": flow },
          el("td", {}, lane),
          el("td", {}, flow),
          td("inflight"),
          td("queued"),
          td("weight"),
          td("share"),
          td("used"),
          el(
            "td",
            {},
            el(
              "div",
              { class: "bar" },
              el("span", { class: "fill", "data-field": "used-bar" }),
              el("span", { class: "mark", "data-field": "share-mark" }),
            ),
          ),
        )
      );
    },
    (row, /** @type {any} */ f) => {
      setText(field(row, "inflight"), String(f.inflight));
      setText(field(row, "queued"), String(f.queued));
      setText(field(row, "weight"), String(f.weight));
      setText(field(row, "share"), pct(f.share));
      setText(field(row, "used"), pct(f.used));
      setShare(field(row, "used-bar"), f.used, 1);
      const mark = field(row, "share-mark");
      const left = `${(Math.max(0, Math.min(1, f.share)) * 100).toFixed(1)}%`;
      if (mark && mark.style.left !== left) mark.style.left = left;
    },
    "no client key has calls waiting or running",
  );
}

/**
 * The rows of `shareTable`: every lane's flows, each with its lane's name.
 * @param {any[]} lanes LaneSnapshot[]
 */
export const laneFlows = (lanes) =>
  lanes.flatMap((l) => (l.flows ?? []).map((/** @type {any} */ f) => ({ lane: l.lane, ...f })));

/**
 * The admission bound (`snapshot.admission`): in flight across every lane, and admitted (body
 * being read, waiting or in flight) against in flight + queued.
 * @param {HTMLElement} box
 * @param {any} admission AdmissionSnapshot or undefined
 */
export function renderAdmission(box, admission) {
  if (!admission) {
    if (!box.querySelector(".none"))
      box.replaceChildren(
        el("p", { class: "muted none" }, "no gateway-wide bound (admission.max_concurrency)"),
      );
    return;
  }
  if (!field(box, "inflight")) {
    const meter = (/** @type {string} */ label, /** @type {string} */ name) =>
      el(
        "div",
        { class: "meter" },
        el("div", { class: "label" }, el("span", {}, label), el("span", { "data-field": name }, "–")),
        el("div", { class: "bar" }, el("span", { class: "fill", "data-field": `${name}-bar` })),
      );
    box.replaceChildren(
      meter("in flight across every lane / max_concurrency", "inflight"),
      meter("admitted (reading, waiting, in flight) / max_concurrency + max_queued", "admitted"),
    );
  }
  const room = admission.max_inflight + admission.max_queued;
  setText(field(box, "inflight"), `${admission.inflight} / ${admission.max_inflight}`);
  setShare(field(box, "inflight-bar"), admission.inflight, admission.max_inflight);
  setText(field(box, "admitted"), `${admission.admitted} / ${room}`);
  setShare(field(box, "admitted-bar"), admission.admitted, room);
}

/** What each fleet-store mode means for the counts on this page. */
const STORE_MODES = {
  connected: "connected: counts and limits are the fleet's",
  local: "unreachable: each replica enforces its share of each limit (on_store_error: local)",
  open: "unreachable: fleet bounds dropped, each replica enforces its own (on_store_error: open)",
  closed: "unreachable: calls are refused 503 store_unavailable (on_store_error: closed)",
};

/**
 * Where budgets are counted (`snapshot.store`): this gateway's memory, or a fleet store and
 * whether it answers, with this replica's name.
 * @param {HTMLElement} line
 * @param {any} store StoreSnapshot or undefined
 */
export function renderStore(line, store) {
  const mode = store?.mode ?? "memory";
  line.setAttribute("data-mode", mode);
  if (mode === "memory") {
    setText(line, "budgets counted in this gateway's memory");
    return;
  }
  const what = STORE_MODES[/** @type {keyof typeof STORE_MODES} */ (mode)] ?? mode;
  const replica = store.replica ? `; this replica is ${store.replica}` : "";
  setText(line, `fleet store ${store.description} ${what}${replica}`);
}
