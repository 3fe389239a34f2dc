/**
 * The retry-storm tables of the gateway benchmark ((d) in docs/bench-gateway.md): one row per
 * load and target, the "refusals alone" run that prices a refusal, and the checks against
 * HAProxy (goodput ≥ 0.95×, p99 of answered calls ≤ 1.2×, a polite client's refusal p99 < 5 ms).
 */
import type { StormResult } from "./protocol.js";
import type { Row } from "./report.js";

export interface StormRow {
  /** `storm`: the lane with live pods; `alone`: the hold lane, where every call is refused. */
  kind: "storm" | "alone";
  /** Storm connections as a multiple of the fleet's slots (0 for `alone`). */
  load: number;
  conns: number;
  polite: number;
  target: Row["target"];
  result: StormResult;
  /** CPU seconds of the proxy and of the load generator in the window. */
  cpu: number;
  clientCpu: number;
  pods: {
    busy: number;
    maxRunning: number;
    maxWaiting: number;
    podCompleted: number;
    podAborted: number;
    podLagP99: number;
  };
  /** sluice's log lines written in the window (NaN for the others). */
  logLines: number;
  /**
   * ms from the storm's first request (warm-up included) to sluice's "retry storm … paced" log
   * line; undefined when it did not switch on in this run (not logged, or already on), NaN for the
   * others.
   */
  pacedAfterMs: number | undefined;
}

export interface StormParams {
  capacity: number;
  slots: number;
  queueLimit: number;
  queueTimeoutMs: number;
  serviceMs: number;
  polite: number;
  politeDefaultMs: number;
  warmMs: number;
  dMs: number;
  log: string;
  holdServiceMs: number;
}

const NAMES: Record<Row["target"], string> = {
  direct: "direct (sim)",
  sluice: "**sluice**",
  haproxy: "HAProxy",
  bare: "bare undici proxy",
  lean: "bare proxy, undici handler API",
  unpaced: "sluice, pacing off",
};

function f(n: number, digits = 1): string {
  if (!Number.isFinite(n)) return "—";
  return n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function table(head: string[], rows: string[][]): string {
  return [
    `| ${head.join(" | ")} |`,
    `| ${head.map((h) => (/^(target|check|load|conns)/.test(h) ? "---" : "---:")).join(" | ")} |`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
}

const goodput = (r: StormRow) => r.result.storm.ok / r.result.seconds + r.result.polite.ok / r.result.seconds;
const refusals = (r: StormRow) => (r.result.storm.refused + r.result.polite.refused) / r.result.seconds;
const answers = (r: StormRow) =>
  r.result.storm.ok +
  r.result.storm.refused +
  r.result.storm.other +
  r.result.polite.ok +
  r.result.polite.refused +
  r.result.polite.other;
const okP99 = (r: StormRow) => r.result.okP99Ms;
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0
    ? "—"
    : `${f(a / b, 2)}×`;
const mark = (ok: boolean | undefined) => (ok === undefined ? "—" : ok ? "✓" : "✗");

export function renderStorm(rows: StormRow[], p: StormParams): string {
  const out: string[] = [];
  out.push(
    "### (d) Retry storm — refused clients re-send at once",
    "",
    `The (c) pods: ${p.slots} slots × ${p.serviceMs} ms = capacity **${f(p.capacity, 0)} req/s**; every proxy holds ${p.slots} in flight and queues ${p.queueLimit} more, and refuses the rest at once: ` +
      `sluice (its own process, \`log: { level: ${p.log} }\`, lines to a file) lane \`max_concurrent_requests: ${p.slots}\`, \`queue_limit: ${p.queueLimit}\`, \`reserve: 0\`; ` +
      `HAProxy \`nbthread 1\`, \`maxconn 8\` per server, \`http-request return status 429 if { queue() ge ${p.queueLimit} }\`; ` +
      `bare proxy: a counter, a fixed 429 past ${p.slots} + ${p.queueLimit} held. Queue timeout ${p.queueTimeoutMs / 1000} s everywhere but the bare proxy. ` +
      `Client: bench/gateway/storm.ts, raw keep-alive sockets; a storm connection re-sends the moment an answer is complete, whatever it was (wrk, or a retry loop without backoff); ` +
      `${p.polite} more connections honour Retry-After (${p.politeDefaultMs / 1000} s when there is none): their refusal p99 is the "polite refusal p99". ` +
      `Load = storm connections ÷ slots; at 8× (128) fewer connections than slots + queue (144) are storming, so almost nothing is refused and it measures the queue path. ` +
      `Goodput and p99 answered = 200s; CPU µs/resp = the proxy's CPU per answer of any status; ` +
      `est. µs/answer = (CPU − refusals × the "refusals alone" µs/refusal) ÷ 200s. ${p.warmMs / 1000} s warm-up, ${p.dMs / 1000} s measured.`,
    "",
  );
  const stormRows = rows.filter((r) => r.kind === "storm");
  const alone = rows.filter((r) => r.kind === "alone");
  const perRefusal = new Map<string, number>();
  for (const r of alone) {
    const n = answers(r);
    if (n > 0 && Number.isFinite(r.cpu)) perRefusal.set(r.target, (r.cpu * 1e6) / n);
  }
  const body: string[][] = [];
  for (const r of stormRows) {
    const n = answers(r);
    const ok = r.result.storm.ok + r.result.polite.ok;
    const unit = perRefusal.get(r.target);
    const refusedN = r.result.storm.refused + r.result.polite.refused;
    const estAnswer =
      unit !== undefined && ok > 0 && Number.isFinite(r.cpu)
        ? (r.cpu * 1e6 - refusedN * unit) / ok
        : Number.NaN;
    body.push([
      `${r.load}×`,
      `${r.conns} + ${r.polite}`,
      NAMES[r.target],
      f(goodput(r), 0),
      `${f((goodput(r) / p.capacity) * 100, 1)} %`,
      f(okP99(r), 0),
      f(refusals(r), 0),
      f(r.result.storm.refusedP99Ms, 2),
      r.result.polite.refused > 0 ? f(r.result.polite.refusedP99Ms, 2) : "none",
      `${f(r.pods.busy * 100, 1)} %`,
      f((r.pods.busy * p.slots * r.result.seconds * 1000) / Math.max(1, r.pods.podCompleted), 1),
      f(r.pods.podLagP99, 1),
      Number.isFinite(r.cpu) ? `${f((r.cpu / r.result.seconds) * 100, 0)} %` : "—",
      n > 0 && Number.isFinite(r.cpu) ? f((r.cpu * 1e6) / n, 1) : "—",
      f(estAnswer, 0),
      Number.isFinite(r.clientCpu) ? `${f((r.clientCpu / r.result.seconds) * 100, 0)} %` : "—",
      Number.isFinite(r.logLines) ? f(r.logLines / r.result.seconds, 0) : "—",
      r.pacedAfterMs === undefined ? "—" : Number.isNaN(r.pacedAfterMs) ? "" : f(r.pacedAfterMs, 0),
      String(r.result.storm.errors + r.result.polite.errors + r.result.storm.other + r.result.polite.other),
    ]);
  }
  if (body.length > 0) {
    out.push(
      table(
        [
          "load",
          "conns (+ polite)",
          "target",
          "goodput req/s",
          "of capacity",
          "p99 answered ms",
          "refusals/s",
          "refusal p99 ms",
          "polite refusal p99 ms",
          "pods busy",
          "pod ms/call",
          "pod loop lag p99 ms",
          "proxy CPU",
          "CPU µs/resp",
          "est. µs/answer",
          "client CPU",
          "log lines/s",
          "paced from ms",
          "errors",
        ],
        body,
      ),
      "",
    );
  }
  if (alone.length > 0) {
    out.push(
      `Refusals alone: the same policy in front of two pods whose calls take ${p.holdServiceMs / 1000} s, so the ${p.slots} slots and the ${p.queueLimit} places stay full and every other request is refused (plus the queue's timeouts: ${p.queueLimit} per ${p.queueTimeoutMs / 1000} s, 503). ${alone[0]!.conns} storm connections.`,
      "",
      table(
        [
          "target",
          "refusals/s",
          "refusal p50 ms",
          "refusal p99 ms",
          "proxy CPU",
          "CPU µs/refusal",
          "client CPU",
          "log lines/s",
        ],
        alone.map((r) => [
          NAMES[r.target],
          f(refusals(r), 0),
          f(r.result.storm.refusedP50Ms, 2),
          f(r.result.storm.refusedP99Ms, 2),
          Number.isFinite(r.cpu) ? `${f((r.cpu / r.result.seconds) * 100, 0)} %` : "—",
          f(perRefusal.get(r.target) ?? Number.NaN, 1),
          Number.isFinite(r.clientCpu) ? `${f((r.clientCpu / r.result.seconds) * 100, 0)} %` : "—",
          Number.isFinite(r.logLines) ? f(r.logLines / r.result.seconds, 0) : "—",
        ]),
      ),
      "",
    );
  }
  const checks: string[][] = [];
  for (const load of [...new Set(stormRows.map((r) => r.load))]) {
    const of = (t: Row["target"]) => stormRows.find((r) => r.load === load && r.target === t);
    const s = of("sluice");
    const h = of("haproxy");
    const b = of("bare");
    checks.push([
      `(d)-${load}× goodput`,
      f(s ? goodput(s) : Number.NaN, 0),
      f(h ? goodput(h) : Number.NaN, 0),
      f(b ? goodput(b) : Number.NaN, 0),
      ratio(s && goodput(s), h && goodput(h)),
      ratio(s && goodput(s), b && goodput(b)),
      "≥ 0.95× HAProxy",
      mark(s && h ? goodput(s) >= 0.95 * goodput(h) : undefined),
    ]);
    checks.push([
      `(d)-${load}× p99 answered ms`,
      f(s ? okP99(s) : Number.NaN, 0),
      f(h ? okP99(h) : Number.NaN, 0),
      f(b ? okP99(b) : Number.NaN, 0),
      ratio(s && okP99(s), h && okP99(h)),
      ratio(s && okP99(s), b && okP99(b)),
      "≤ 1.2× HAProxy",
      mark(s && h ? okP99(s) <= 1.2 * okP99(h) : undefined),
    ]);
    checks.push([
      `(d)-${load}× polite refusal p99 ms`,
      s && s.result.polite.refused > 0 ? f(s.result.polite.refusedP99Ms, 2) : "none",
      h && h.result.polite.refused > 0 ? f(h.result.polite.refusedP99Ms, 2) : "none",
      b && b.result.polite.refused > 0 ? f(b.result.polite.refusedP99Ms, 2) : "none",
      "",
      "",
      "< 5 ms",
      mark(s === undefined || s.result.polite.refused === 0 ? undefined : s.result.polite.refusedP99Ms < 5),
    ]);
  }
  if (checks.length > 0) {
    out.push(
      table(
        ["check", "sluice", "HAProxy", "bare", "sluice ÷ HAProxy", "sluice ÷ bare", "target", "met"],
        checks,
      ),
      "",
    );
  }
  return out.join("\n");
}
