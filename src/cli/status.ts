/**
 * `sluice status`: fetches a gateway's snapshot (`GET /api/telemetry/lanes`, DESIGN §4) and prints
 * it as plain padded tables, or as JSON with `--json`. Thin on purpose: `formatStatus` is pure and
 * tested from a fixed snapshot. Exit codes: 0 printed, 1 no usable answer, 2 bad usage.
 */
import type { ParseArgsConfig } from "node:util";
import { request } from "undici";
import type {
  AdmissionSnapshot,
  BucketSnapshot,
  GroupSnapshot,
  KeySnapshot,
  LaneSnapshot,
  PodSnapshot,
  Snapshot,
} from "../core/snapshot.js";
import { parseCliArgs } from "./args.js";

/** Where the gateway listens when `--url` and `SLUICE_URL` are absent (DESIGN §3.4 `listen`). */
export const DEFAULT_URL = "http://127.0.0.1:8080";
/** The snapshot route. */
export const LANES_PATH = "/api/telemetry/lanes";
const TIMEOUT_MS = 5000;

const USAGE = `usage: sluice status [--url URL] [--json]

  --url URL   the gateway to ask (default $SLUICE_URL, else ${DEFAULT_URL})
  --json      print the snapshot as JSON instead of tables
  -h, --help  show this help

  Off loopback, the admin key is read from $SLUICE_ADMIN_KEY and sent as a Bearer token.
`;

/** Every flag `sluice status` accepts (node:util parseArgs options); the help has a line for each. */
export const OPTIONS = {
  url: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

/** Where `main` writes; tests pass their own, the CLI uses the process's. */
export interface StatusCliIo {
  out?: (text: string) => void;
  err?: (text: string) => void;
  env?: Record<string, string | undefined>;
}

/** Runs `sluice status` with the arguments after `status`; resolves to the exit code. */
export async function main(argv: string[], io: StatusCliIo = {}): Promise<number> {
  const out = io.out ?? ((text: string) => process.stdout.write(`${text}\n`));
  const err = io.err ?? ((text: string) => process.stderr.write(`${text}\n`));
  const env = io.env ?? process.env;
  let values: { url?: string; json?: boolean; help?: boolean };
  try {
    ({ values } = parseCliArgs(argv, OPTIONS));
  } catch (e) {
    err(`sluice status: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    out(USAGE);
    return 0;
  }
  const base = values.url ?? env.SLUICE_URL ?? DEFAULT_URL;
  let url: URL;
  try {
    url = new URL(LANES_PATH, base);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new TypeError("not http(s)");
  } catch {
    err(
      `sluice status: --url expects an http(s) URL such as ${DEFAULT_URL}; got ${JSON.stringify(base)}\n\n${USAGE}`,
    );
    return 2;
  }
  const key = env.SLUICE_ADMIN_KEY;
  let status: number;
  let text: string;
  try {
    const res = await request(url, {
      headers: key ? { authorization: `Bearer ${key}` } : {},
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS,
    });
    status = res.statusCode;
    text = await res.body.text();
  } catch (e) {
    const code = errorCode(e);
    err(
      CONNECT_ERRORS.has(code)
        ? `sluice status: no gateway answering at ${base} (${code})`
        : `sluice status: asking ${url.href} failed: ${code}`,
    );
    return 1;
  }
  if (status !== 200) {
    err(`sluice status: ${url.href} answered ${status}: ${text.slice(0, 300).trim()}`);
    return 1;
  }
  let snapshot: Snapshot;
  try {
    snapshot = JSON.parse(text) as Snapshot;
  } catch {
    err(`sluice status: ${url.href} did not answer with JSON; is ${base} a sluice gateway?`);
    return 1;
  }
  out(values.json ? JSON.stringify(snapshot, null, 2) : formatStatus(snapshot));
  return 0;
}

/**
 * The snapshot as plain-text tables: the store, lanes, pods, groups, admission, the keys'
 * (tenants') parts of each lane, keys (empty sections are left out). With a fleet store each shared budget shows the fleet's in flight and
 * this replica's share; while Redis is unreachable the fleet's count is unknown and shows `?`.
 */
export function formatStatus(s: Snapshot): string {
  const lines = [`sluice ${s.replica} at ${s.generated_at}`];
  if (s.store !== undefined) lines.push(storeLine(s.store));
  if (!s.enabled || s.lanes.length === 0) {
    lines.push("", "no lanes: admission control has nothing to govern yet");
    return lines.join("\n");
  }
  const fleet = fleetColumns(s.store);
  lines.push(
    "",
    ...table(
      [
        "LANE",
        ...fleet.header("INFLIGHT/LIMIT"),
        "WIDTH",
        "QUEUED/LIMIT (I/D/B)",
        "OLDEST WAIT",
        "WAIT P50/P90 5M",
        "TIMEOUTS 5M",
        "SATURATED",
        "STATE",
      ],
      s.lanes.map((l) => laneRow(l, fleet)),
    ),
  );
  if (s.pods.length > 0)
    lines.push(
      "",
      ...table(
        ["POD", "LANE", "WIDTH/CEILING", ...fleet.header("INFLIGHT"), "BREAKER"],
        s.pods.map((p) => podRow(p, fleet)),
      ),
    );
  // The admission bound is also listed among the groups (as `gateway`, for older readers of the
  // snapshot); its own table below shows it with the fleet's count, so it is not shown twice.
  const groups = s.groups.filter((g) => !isAdmissionGroup(g, s.admission));
  if (groups.length > 0)
    lines.push(
      "",
      ...table(
        ["GROUP", ...fleet.header("INFLIGHT/LIMIT")],
        groups.map((g) => [g.group, ...fleet.cells(g, g.limit)]),
      ),
    );
  if (s.admission !== undefined) {
    const a = s.admission;
    lines.push(
      "",
      ...table(
        ["ADMISSION", ...fleet.header("INFLIGHT/MAX"), "ADMITTED/MAX"],
        [["gateway", ...fleet.cells(a, a.max_inflight), `${a.admitted}/${a.max_inflight + a.max_queued}`]],
      ),
    );
  }
  const shares = s.lanes.filter((l) => l.flows !== undefined && l.flows.length > 0);
  if (shares.length > 0) lines.push("", ...flowTable(shares));
  if (s.keys.length > 0) lines.push("", ...keyTable(s.keys));
  if (s.tenants !== undefined && s.tenants.length > 0)
    lines.push(
      "",
      ...table(
        ["TENANT", "KEYS", "INFLIGHT", "QUEUED", "TOKENS/MIN USED/TPM", "REQUESTS/MIN USED/RPM"],
        s.tenants.map((t) => [
          t.tenant,
          t.keys.join(","),
          String(t.inflight),
          String(t.queued),
          usedOf(t.tokens),
          usedOf(t.requests),
        ]),
      ),
    );
  return lines.join("\n");
}

/**
 * The keys' table; with any key's tenant or budget configured, also the tenant and each budget's
 * use over the last minute against its rate (`-` for none).
 */
function keyTable(keys: readonly KeySnapshot[]): string[] {
  const head = ["KEY", "INFLIGHT", "QUEUED", "MAX INFLIGHT"];
  const row = (k: KeySnapshot) => [k.key, String(k.inflight), String(k.queued), String(k.max_inflight)];
  if (!keys.some((k) => k.tenant !== undefined || k.tokens !== undefined || k.requests !== undefined))
    return table(head, keys.map(row));
  return table(
    [...head, "TENANT", "TOKENS/MIN USED/TPM", "REQUESTS/MIN USED/RPM"],
    keys.map((k) => [...row(k), k.tenant ?? "-", usedOf(k.tokens), usedOf(k.requests)]),
  );
}

/**
 * Each key's (tenant's) part of each lane where a configured key waits or runs: its calls there,
 * its configured share of the active flows (by weight) and the part of the lane's calls it holds
 * (this replica's): a key far above its share holds what the others do not ask for.
 */
function flowTable(lanes: readonly LaneSnapshot[]): string[] {
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  return table(
    ["LANE", "FLOW", "INFLIGHT", "QUEUED", "WEIGHT", "SHARE", "USED"],
    lanes.flatMap((l) =>
      (l.flows ?? []).map((f) => [
        l.lane,
        f.flow,
        String(f.inflight),
        String(f.queued),
        String(f.weight),
        pct(f.share),
        pct(f.used),
      ]),
    ),
  );
}

/** A bucket's use over the last minute against its per-minute rate, `-` without one. */
function usedOf(b: BucketSnapshot | null | undefined): string {
  return b ? `${b.used_1m}/${b.per_minute}` : "-";
}

function isAdmissionGroup(g: GroupSnapshot, a: AdmissionSnapshot | undefined): boolean {
  return a !== undefined && g.group === "gateway" && g.limit === a.max_inflight && g.inflight === a.inflight;
}

type StoreState = NonNullable<Snapshot["store"]>;

// What each outage policy means for the counts shown (docs/fleet.md, "When Redis goes away").
const MODES: Record<StoreState["mode"], string> = {
  memory: "this process only",
  connected: "counts are the fleet's, with this replica's share",
  local: "Redis unreachable: each fleet limit ÷ expected_replicas held in this process; fleet counts unknown",
  open: "Redis unreachable: the fleet bound is dropped; fleet counts unknown",
  closed: "Redis unreachable: new calls refused (503 store_unavailable); fleet counts unknown",
};

function storeLine(store: StoreState): string {
  if (store.mode === "memory") return `store ${store.description}: ${MODES.memory}`;
  return `store ${store.description} (replica ${store.replica ?? "?"}): ${store.mode}, ${MODES[store.mode]}`;
}

/** A count the fleet may share: this replica's `inflight`, and the fleet's when others hold some. */
interface Shared {
  inflight: number;
  fleet_inflight?: number;
}

/** The in-flight columns: one (this process) with the memory store, two (fleet, this replica) with a fleet store. */
function fleetColumns(store: StoreState | undefined) {
  const fleet = store !== undefined && store.mode !== "memory";
  const known = store?.mode === "connected";
  return {
    header: (name: string): string[] => (fleet ? [`FLEET ${name}`, "THIS REPLICA"] : [name]),
    /** The count (over `limit` when given), then this replica's share in fleet mode. */
    cells(b: Shared, limit?: number): string[] {
      const over = limit === undefined ? "" : `/${limit}`;
      if (!fleet) return [`${b.inflight}${over}`];
      return [`${known ? (b.fleet_inflight ?? b.inflight) : "?"}${over}`, String(b.inflight)];
    },
  };
}

function laneRow(l: LaneSnapshot, fleet: ReturnType<typeof fleetColumns>): string[] {
  const q = l.queued_by_priority;
  return [
    l.lane,
    ...fleet.cells(l, l.limit),
    String(l.width),
    `${l.queued}/${l.queue_limit} (${q.interactive}/${q.default}/${q.bulk})`,
    duration(l.oldest_wait_s),
    `${duration(l.wait_p50_s_5m)}/${duration(l.wait_p90_s_5m)}`,
    String(l.queue_timeouts_5m),
    l.saturated ? "yes" : "no",
    l.state,
  ];
}

function podRow(p: PodSnapshot, fleet: ReturnType<typeof fleetColumns>): string[] {
  let breaker: string = p.breaker;
  if (p.breaker === "open") breaker += ` (reopens in ${duration(p.reopens_in_s)}, trip ${p.trips})`;
  if (p.paused_s > 0) breaker += `, paused ${duration(p.paused_s)}`;
  return [p.id, p.lane, `${p.width}/${p.ceiling}`, ...fleet.cells(p), breaker];
}

/** Left-aligned columns two spaces apart, a header row first; trailing spaces trimmed. */
export function table(header: string[], rows: string[][]): string[] {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").length)));
  return all.map((r) =>
    r
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join("  ")
      .trimEnd(),
  );
}

/** Seconds as a short human duration: `0s`, `850ms`, `4.2s`, `38s`, `3m32s`, `1h05m`. */
export function duration(seconds: number): string {
  if (!(seconds > 0)) return "0s";
  if (seconds < 1) return `${Math.round(seconds * 1000)}ms`;
  if (seconds < 10) return `${Number(seconds.toFixed(1))}s`;
  if (seconds < 59.5) return `${Math.round(seconds)}s`;
  const total = Math.round(seconds);
  if (total < 3600) return `${Math.floor(total / 60)}m${String(total % 60).padStart(2, "0")}s`;
  return `${Math.floor(total / 3600)}h${String(Math.floor((total % 3600) / 60)).padStart(2, "0")}m`;
}

// Nothing listens (or nothing is reachable) at the URL, as opposed to a gateway that misbehaved.
const CONNECT_ERRORS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_SOCKET",
]);

function errorCode(e: unknown): string {
  // Node ≥ 20 may try several addresses (happy eyeballs) and throw an AggregateError of them.
  const error = e as { code?: string; message?: string; errors?: { code?: string }[] };
  return error.code ?? error.errors?.[0]?.code ?? error.message ?? String(e);
}
