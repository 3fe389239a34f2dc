/**
 * The table of the wrk-driven retry storm (wrk-storm.ts) and its checks against HAProxy in the
 * same run: goodput ≥ 0.97×, answered p99 ≤ 1.2× (issue 26's targets; a benchmark, not a test).
 */
import type { PodMeter } from "./pod-meter.js";
import type { WrkStormResult } from "./wrk-run.js";

export interface WrkRow {
  /** `cold`: a fresh proxy hit by the storm from its first request; `warm`: primed first. */
  run: "cold" | "warm";
  connections: number;
  target: "sluice" | "sluice (B)" | "haproxy";
  result: WrkStormResult;
  /** The proxy's CPU seconds during the run. */
  cpu: number;
  pods: ReturnType<PodMeter["stop"]>;
  /** Times sluice logged pacing switching on during the run (NaN for HAProxy). */
  pacedOn: number;
}

export interface WrkParams {
  seconds: number;
  /** sluice ran as the built CLI. */
  cli: boolean;
  capacity: number;
}

function f(n: number, digits = 0): string {
  if (!Number.isFinite(n)) return "—";
  return n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

const ok = (r: WrkRow) => r.result.statuses["200"] ?? 0;
const goodput = (r: WrkRow) => ok(r) / r.result.seconds;
const refused = (r: WrkRow) => (r.result.statuses["429"] ?? 0) + (r.result.statuses["503"] ?? 0);
const other = (r: WrkRow) => r.result.requests - ok(r) - refused(r);
const label = (r: WrkRow) => `${r.run === "cold" ? "cold " : ""}-c${r.connections}`;

export function renderWrkStorm(rows: WrkRow[], p: WrkParams): string {
  const out = [
    "### (d) Retry storm sent by wrk",
    "",
    `\`wrk -t2 -cN -d${p.seconds}s --latency --timeout 10s -s bench/gateway/wrk-storm.lua\` (bench/gateway/wrk-storm.ts): a wrk connection sends its next request the moment an answer arrives, refused or not. ` +
      `Two sim pods of 8 slots answering after 50 ms (capacity **${f(p.capacity)} req/s**); sluice (${p.cli ? "the built CLI" : "src through tsx"}, log level info to a file) with ` +
      "`admission: { max_concurrency: 16, max_queued: 128, queue_timeout_s: 30 }` and one model of `max_concurrent_requests: 16, queue_limit: 128, reserve: 0` over both pods, reached through `routes: [{ match: /ocr/ }]`; " +
      "HAProxy `nbthread 1`, `maxconn 8` per server, 429 past 128 queued, `timeout queue 30s`. " +
      "Answered = 200s, their latency paired by the send time the pods echo (wrk-storm.lua); every answer = wrk's own latency of all statuses. " +
      '"cold": a fresh proxy, the storm from its first request; the others run after a light priming run. CPU µs/answer = the proxy\'s CPU ÷ 200s.',
    "",
    "| run | target | answered req/s | of capacity | answered p50 / p99 ms | refusals/s | every answer p50 / p99 ms | pods busy | proxy CPU | CPU µs/answer | paced on | other, errors |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const r of rows) {
    const s = r.result;
    out.push(
      `| ${label(r)} | ${r.target === "sluice" ? "**sluice**" : r.target === "haproxy" ? "HAProxy" : r.target} | ${f(goodput(r))} | ${f((goodput(r) / p.capacity) * 100, 1)} % | ` +
        `${f(s.okP50Ms)} / ${f(s.okP99Ms)} | ${f(refused(r) / s.seconds)} | ${f(s.allP50Ms, 1)} / ${f(s.allP99Ms, 1)} | ` +
        `${f(r.pods.busy * 100, 1)} % | ${f((r.cpu / s.seconds) * 100)} % | ${f((r.cpu * 1e6) / Math.max(1, ok(r)))} | ${Number.isNaN(r.pacedOn) ? "" : `${r.pacedOn}×`} | ${other(r)}, ${s.errors} |`,
    );
  }
  out.push(
    "",
    "| check | sluice | HAProxy | sluice ÷ HAProxy | target | met |",
    "| --- | ---: | ---: | ---: | --- | --- |",
  );
  for (const key of [...new Set(rows.map(label))]) {
    const s = rows.find((r) => label(r) === key && r.target === "sluice");
    const h = rows.find((r) => label(r) === key && r.target === "haproxy");
    if (s === undefined || h === undefined) continue;
    const g = goodput(s) / goodput(h);
    const t = s.result.okP99Ms / h.result.okP99Ms;
    out.push(
      `| ${key} goodput | ${f(goodput(s))} | ${f(goodput(h))} | ${f(g, 2)}× | ≥ 0.97× | ${g >= 0.97 ? "✓" : "✗"} |`,
      `| ${key} answered p99 ms | ${f(s.result.okP99Ms)} | ${f(h.result.okP99Ms)} | ${f(t, 2)}× | ≤ 1.2× | ${t <= 1.2 ? "✓" : "✗"} |`,
    );
  }
  return `${out.join("\n")}\n`;
}
