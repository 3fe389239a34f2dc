/**
 * The gateway benchmark's tables: one markdown table per scenario, then the ratios
 * (sluice ÷ HAProxy, sluice ÷ bare proxy) and ✓/✗ against each target. The same text is printed
 * and written between the result markers of docs/bench-gateway.md.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";

export interface Row {
  scenario: "a" | "b" | "c";
  conns: number;
  /** (c): the offered load as a multiple of the fleet's slots. */
  load?: number;
  target: "direct" | "sluice" | "haproxy" | "bare" | "lean" | "unpaced";
  seconds: number;
  ok: number;
  refused: number;
  other: number;
  errors: number;
  /** Latency of 200s, ms. */
  p50: number;
  p99: number;
  /** Latency of 429/503 answers, ms. */
  refusedP99: number;
  /** CPU seconds the proxy process used in the window (NaN for direct). */
  cpu: number;
  /** CPU seconds the Node load generator used in the window (NaN with wrk). */
  clientCpu: number;
  /** Time-integral of running ÷ (maxNumSeqs × window), over the pods. */
  busy: number;
  maxRunning: number;
  maxWaiting: number;
  /** Answers the pods completed in the window, and calls they saw cut off. */
  podCompleted: number;
  podAborted: number;
  /** p99 timer lateness of the pods' event loop in the window, ms. */
  podLagP99: number;
}

export interface Meta {
  uptime: string;
  cores: number;
  cpu: string;
  node: string;
  haproxy: string;
  loadgenA: string;
  date: string;
  seconds: number;
  loadavg: string;
  /** (c) capacity in req/s. */
  capacity: number;
  quick: boolean;
  commit: string;
}

export interface Params {
  abSlots: number;
  cSlots: number;
  pods: number;
  serviceMs: number;
  jitter: number;
  queueLimit: number;
  queueTimeoutMs: number;
  backoffMs: number;
  warmMs: number;
  aMs: number;
  bMs: number;
  cMs: number;
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
const rps = (r: Row) => r.ok / r.seconds;
const cpuPct = (r: Row) => (Number.isFinite(r.cpu) ? `${f((r.cpu / r.seconds) * 100, 0)} %` : "—");
const cpuPer = (r: Row) => {
  const n = r.ok + r.refused + r.other;
  return Number.isFinite(r.cpu) && n > 0 ? f((r.cpu * 1e6) / n, 0) : "—";
};
const mark = (ok: boolean | undefined) => (ok === undefined ? "—" : ok ? "✓" : "✗");
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0
    ? "—"
    : `${f(a / b, 2)}×`;

function table(head: string[], rows: string[][]): string {
  return [
    `| ${head.join(" | ")} |`,
    `| ${head.map((h) => (/^(target|check|load|conns)/.test(h) ? "---" : "---:")).join(" | ")} |`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
}

/** The rows of one scenario level, by target. */
function level(rows: Row[], scenario: Row["scenario"], conns: number) {
  const of = (t: Row["target"]) =>
    rows.find((r) => r.scenario === scenario && r.conns === conns && r.target === t);
  return {
    direct: of("direct"),
    sluice: of("sluice"),
    haproxy: of("haproxy"),
    bare: of("bare"),
    lean: of("lean"),
  };
}

export function renderReport(rows: Row[], meta: Meta, notes: string[], p: Params): string {
  const out: string[] = [];
  out.push(
    `Run ${meta.date} (${meta.seconds} s${meta.quick ? ", --quick" : ""}) of ${meta.commit} on ${meta.cores} cores (${meta.cpu}), Node ${meta.node}, ${meta.haproxy}.`,
    `Machine load before the run: \`${meta.uptime}\` (after: ${meta.loadavg}). Load generator, proxy and simulated pods share these cores; other work on the machine was not stopped.`,
    "",
  );
  for (const n of notes) out.push(`> ${n}`, "");

  const as = [...new Set(rows.filter((r) => r.scenario === "a").map((r) => r.conns))];
  if (as.length > 0) {
    out.push(
      `### (a) Zero service time — throughput and added latency`,
      "",
      `Sim \`serviceMs: 0\`, non-streamed answer (4 tokens); ${meta.loadgenA}; ${p.warmMs / 1000} s warm-up, ${p.aMs / 1000} s measured. "+p50/+p99" = minus direct. Proxy CPU = share of one core; µs/req = proxy CPU time per answer.`,
      "",
    );
    const body: string[][] = [];
    for (const c of as) {
      const l = level(rows, "a", c);
      for (const r of [l.direct, l.sluice, l.haproxy, l.bare, l.lean]) {
        if (r === undefined) continue;
        const d = l.direct;
        body.push([
          String(c),
          NAMES[r.target],
          f(rps(r), 0),
          f(r.p50, 2),
          f(r.p99, 2),
          r === d || d === undefined ? "—" : f(r.p50 - d.p50, 2),
          r === d || d === undefined ? "—" : f(r.p99 - d.p99, 2),
          cpuPct(r),
          cpuPer(r),
          String(r.other + r.errors),
        ]);
      }
    }
    out.push(
      table(
        [
          "conns",
          "target",
          "req/s",
          "p50 ms",
          "p99 ms",
          "+p50 ms",
          "+p99 ms",
          "proxy CPU",
          "CPU µs/req",
          "non-200",
        ],
        body,
      ),
      "",
    );
    const checks: string[][] = [];
    for (const c of as) {
      const l = level(rows, "a", c);
      const s = l.sluice && rps(l.sluice);
      const h = l.haproxy && rps(l.haproxy);
      const b = l.bare && rps(l.bare);
      checks.push([
        `(a)-${c} req/s`,
        f(s ?? Number.NaN, 0),
        f(h ?? Number.NaN, 0),
        f(b ?? Number.NaN, 0),
        ratio(s, h),
        ratio(s, b),
        "≥ 0.5× HAProxy; ≥ 2× bare",
        `${mark(s !== undefined && h !== undefined ? s >= 0.5 * h : undefined)} ${mark(s !== undefined && b !== undefined ? s >= 2 * b : undefined)}`,
      ]);
    }
    out.push(
      table(
        ["check", "sluice", "HAProxy", "bare", "sluice ÷ HAProxy", "sluice ÷ bare", "target", "met"],
        checks,
      ),
      "",
    );
  }

  const bs = [...new Set(rows.filter((r) => r.scenario === "b").map((r) => r.conns))];
  if (bs.length > 0) {
    out.push(
      `### (b) ${p.serviceMs} ms service, streamed — goodput and added p99`,
      "",
      `Sim \`serviceMs: ${p.serviceMs}\` (jitter σ ${p.jitter}), \`stream: true\`, 4 tokens paced 1 ms apart; ${p.pods} pods × ${p.abSlots} slots (no proxy queues); Node load generator, connections' first requests spread over one service time; ${p.warmMs / 1000} s warm-up, ${p.bMs / 1000} s measured. Goodput = 200s completed per second.`,
      "",
    );
    const body: string[][] = [];
    const checks: string[][] = [];
    for (const c of bs) {
      const l = level(rows, "b", c);
      for (const r of [l.direct, l.sluice, l.haproxy, l.bare, l.lean]) {
        if (r === undefined) continue;
        const d = l.direct;
        body.push([
          String(c),
          NAMES[r.target],
          f(rps(r), 0),
          f(r.p50, 2),
          f(r.p99, 2),
          r === d || d === undefined ? "—" : f(r.p50 - d.p50, 2),
          r === d || d === undefined ? "—" : f(r.p99 - d.p99, 2),
          cpuPct(r),
          cpuPer(r),
          String(r.refused + r.other + r.errors),
        ]);
      }
      const added = l.sluice && l.direct ? l.sluice.p99 - l.direct.p99 : undefined;
      checks.push([
        `(b)-${c} goodput`,
        f(l.sluice ? rps(l.sluice) : Number.NaN, 0),
        f(l.haproxy ? rps(l.haproxy) : Number.NaN, 0),
        f(l.bare ? rps(l.bare) : Number.NaN, 0),
        ratio(l.sluice && rps(l.sluice), l.haproxy && rps(l.haproxy)),
        ratio(l.sluice && rps(l.sluice), l.bare && rps(l.bare)),
        "—",
        "",
      ]);
      checks.push([
        `(b)-${c} added p99 ms`,
        f(added ?? Number.NaN, 2),
        f(l.haproxy && l.direct ? l.haproxy.p99 - l.direct.p99 : Number.NaN, 2),
        f(l.bare && l.direct ? l.bare.p99 - l.direct.p99 : Number.NaN, 2),
        "",
        "",
        "≤ 2 ms",
        mark(added === undefined ? undefined : added <= 2),
      ]);
    }
    out.push(
      table(
        [
          "conns",
          "target",
          "goodput req/s",
          "p50 ms",
          "p99 ms",
          "+p50 ms",
          "+p99 ms",
          "proxy CPU",
          "CPU µs/req",
          "non-200",
        ],
        body,
      ),
      "",
      table(
        ["check", "sluice", "HAProxy", "bare", "sluice ÷ HAProxy", "sluice ÷ bare", "target", "met"],
        checks,
      ),
      "",
    );
  }

  const cs = [...new Set(rows.filter((r) => r.scenario === "c").map((r) => r.conns))];
  if (cs.length > 0) {
    const slots = p.cSlots * p.pods;
    out.push(
      `### (c) Overload — ${cs.map((c) => `${c / slots}×`).join(" and ")} the fleet's capacity`,
      "",
      `${p.pods} pods × ${p.cSlots} slots = ${slots} slots, \`serviceMs: ${p.serviceMs}\` (jitter σ ${p.jitter}), streamed answer written at once: capacity = ${slots} / ${p.serviceMs} ms = **${f(meta.capacity, 0)} req/s**. ` +
        `Closed loop; after a refusal (429/503) or an error a client waits a fixed ${p.backoffMs} ms (the same for every target; sluice's own Retry-After is ≥ 1 s, HAProxy sends none) and sends again. ` +
        `sluice: lane \`max_concurrent_requests: ${slots}\`, pods \`max_inflight: ${p.cSlots}\`, \`queue_limit: ${p.queueLimit}\`, \`queue_timeout_s: ${p.queueTimeoutMs / 1000}\`, \`reserve: 0\`. ` +
        `HAProxy: \`maxconn ${p.cSlots}\` per server, one backend queue, \`timeout queue ${p.queueTimeoutMs / 1000}s\` (→ 503). Bare proxy: undici Pool of ${p.cSlots} per pod, unbounded queue. Direct: no admission at all (the pods queue). ` +
        `Pods busy = time-integral of running ÷ (max_num_seqs × window), exact (the pods' schedulers are metered); "max run/wait" = the highest running and waiting any pod saw (a proxy that keeps the per-pod limit leaves waiting at 0); pods done/s = answers the pods completed; pod ms/call = slot time per completed call (the service time as the pods lived it, ${p.serviceMs} ms when nothing slows them); pod loop lag = p99 lateness of the pods' timers (their process gets less CPU when proxy and client burn more); client CPU = the load generator's share of a core (refusals cost the client too, and the pods share the cores). ${p.warmMs / 1000} s warm-up, ${p.cMs / 1000} s measured.`,
      "",
    );
    const body: string[][] = [];
    const checks: string[][] = [];
    for (const c of cs) {
      const l = level(rows, "c", c);
      const load = c / slots;
      for (const r of [l.direct, l.sluice, l.haproxy, l.bare, l.lean]) {
        if (r === undefined) continue;
        body.push([
          `${load}×`,
          String(c),
          NAMES[r.target],
          f(rps(r), 0),
          `${f((rps(r) / meta.capacity) * 100, 1)} %`,
          f(r.p99, 1),
          f(r.refused / r.seconds, 0),
          f(r.refusedP99, 2),
          `${f(r.busy * 100, 1)} %`,
          `${r.maxRunning} / ${r.maxWaiting}`,
          f(r.podCompleted / r.seconds, 0),
          f((r.busy * p.cSlots * p.pods * r.seconds * 1000) / r.podCompleted, 1),
          f(r.podLagP99, 1),
          String(r.other + r.errors + r.podAborted),
          cpuPct(r),
          cpuPer(r),
          Number.isFinite(r.clientCpu) ? `${f((r.clientCpu / r.seconds) * 100, 0)} %` : "—",
        ]);
      }
      const s = l.sluice;
      const pct = s ? rps(s) / meta.capacity : undefined;
      const need = load <= 2 ? 0.95 : 0.9;
      const h = l.haproxy;
      checks.push([
        `(c)-${load}× goodput % of capacity`,
        s ? `${f(pct! * 100, 1)} %` : "—",
        h ? `${f((rps(h) / meta.capacity) * 100, 1)} %` : "—",
        l.bare ? `${f((rps(l.bare) / meta.capacity) * 100, 1)} %` : "—",
        ratio(s && rps(s), h && rps(h)),
        ratio(s && rps(s), l.bare && rps(l.bare)),
        `≥ ${need * 100} %; ≥ HAProxy`,
        `${mark(pct === undefined ? undefined : pct >= need)} ${mark(s && h ? rps(s) >= rps(h) : undefined)}`,
      ]);
      checks.push([
        `(c)-${load}× p99 admitted ms`,
        f(s?.p99 ?? Number.NaN, 1),
        f(h?.p99 ?? Number.NaN, 1),
        f(l.bare?.p99 ?? Number.NaN, 1),
        ratio(s?.p99, h?.p99),
        ratio(s?.p99, l.bare?.p99),
        "—",
        "",
      ]);
      checks.push([
        `(c)-${load}× refusal p99 ms`,
        s && s.refused > 0 ? f(s.refusedP99, 2) : "no refusals",
        h && h.refused > 0 ? f(h.refusedP99, 2) : "no refusals",
        l.bare && l.bare.refused > 0 ? f(l.bare.refusedP99, 2) : "no refusals",
        "",
        "",
        "< 5 ms",
        mark(s === undefined ? undefined : s.refused === 0 ? load <= 2 : s.refusedP99 < 5),
      ]);
      checks.push([
        `(c)-${load}× per-pod limit kept`,
        s ? `${s.maxRunning} / ${s.maxWaiting}` : "—",
        h ? `${h.maxRunning} / ${h.maxWaiting}` : "—",
        l.bare ? `${l.bare.maxRunning} / ${l.bare.maxWaiting}` : "—",
        "",
        "",
        `running ≤ ${p.cSlots}, waiting 0`,
        mark(s === undefined ? undefined : s.maxRunning <= p.cSlots && s.maxWaiting === 0),
      ]);
    }
    out.push(
      table(
        [
          "load",
          "conns",
          "target",
          "goodput req/s",
          "of capacity",
          "p99 admitted ms",
          "refusals/s",
          "refusal p99 ms",
          "pods busy",
          "max run / wait",
          "pods done/s",
          "pod ms/call",
          "pod loop lag p99 ms",
          "errors",
          "proxy CPU",
          "CPU µs/answer",
          "client CPU",
        ],
        body,
      ),
      "",
      table(
        ["check", "sluice", "HAProxy", "bare", "sluice ÷ HAProxy", "sluice ÷ bare", "target", "met"],
        checks,
      ),
      "",
    );
  }
  return out.join("\n");
}

const START = "<!-- bench:gateway results start -->";
const END = "<!-- bench:gateway results end -->";

/** Replaces the results between the markers (creating the doc around them if it is missing). */
export function writeDoc(path: string, report: string): void {
  const block = `${START}\n${report}\n${END}`;
  let text = existsSync(path) ? readFileSync(path, "utf8") : `# Gateway benchmark\n\n${START}\n${END}\n`;
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  text = a === -1 || b === -1 ? `${text}\n${block}\n` : text.slice(0, a) + block + text.slice(b + END.length);
  writeFileSync(path, text);
}
