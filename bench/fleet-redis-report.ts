/**
 * The tables `npm run bench:fleet` prints (markdown, pasted as they are into docs/bench-fleet.md)
 * and its verdicts against issue 9's targets.
 */
import type { CommandCount } from "./fleet-redis-count.js";
import type { PacedResult, RunResult } from "./fleet-redis-measure.js";
import type { WorkersRow } from "./fleet-redis-workers.js";

export interface LibraryRow {
  name: string;
  releaseAwaited: boolean;
  /** Median over rounds, per caller count. */
  byCallers: Map<number, RunResult>;
  count?: CommandCount;
  paced?: PacedResult;
}

const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "—");
const us = (n: number) =>
  Number.isFinite(n) ? (n >= 1000 ? `${(n / 1000).toFixed(1)} ms` : `${n.toFixed(0)} µs`) : "—";
const x = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : "—");
const per = (n: number | undefined) => (n === undefined ? "—" : n.toFixed(3));

export function libraryTable(rows: readonly LibraryRow[], callers: readonly number[]): string {
  const head = ["contender", "release awaited"];
  for (const c of callers) head.push(`${c} caller${c > 1 ? "s" : ""}: ops/s`, "p50", "p99", "client CPU/op");
  head.push("cmds sent / grant+release", "round trips before grant", "cmds inside scripts");
  const lines = [`| ${head.join(" | ")} |`, `|${head.map((_, i) => (i < 2 ? "---" : "---:")).join("|")}|`];
  for (const r of rows) {
    const cells = [r.name, r.releaseAwaited ? "yes" : "no"];
    for (const c of callers) {
      const m = r.byCallers.get(c);
      cells.push(
        m === undefined ? "—" : int(m.opsPerS),
        m === undefined ? "—" : us(m.p50Us),
        m === undefined ? "—" : us(m.p99Us),
        m === undefined ? "—" : us(m.cpuUsPerOp),
      );
    }
    cells.push(
      per(r.count?.clientPerGrant),
      per(r.count?.beforeGrantPerGrant),
      per(r.count?.scriptedPerGrant),
    );
    lines.push(`| ${cells.join(" | ")} |`);
  }
  return lines.join("\n");
}

/** sluice Governor's ops/s ÷ each other contender's, per caller count. */
export function ratioTable(rows: readonly LibraryRow[], callers: readonly number[], subject: string): string {
  const me = rows.find((r) => r.name === subject);
  if (me === undefined) return "";
  const head = [`${subject} ÷`, ...callers.map((c) => `${c} caller${c > 1 ? "s" : ""}`)];
  const lines = [`| ${head.join(" | ")} |`, `|---|${callers.map(() => "---:").join("|")}|`];
  for (const r of rows) {
    if (r === me) continue;
    const cells = callers.map((c) =>
      x((me.byCallers.get(c)?.opsPerS ?? NaN) / (r.byCallers.get(c)?.opsPerS ?? NaN)),
    );
    lines.push(`| ${r.name} | ${cells.join(" | ")} |`);
  }
  return lines.join("\n");
}

export function pacedTable(rows: readonly LibraryRow[]): string {
  const lines = [
    "| contender | asked grants/s | achieved | p50 | p99 | most outstanding | failed | scavenges (longest pause) |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const r of rows) {
    const p = r.paced;
    if (p === undefined) continue;
    lines.push(
      `| ${r.name} | ${int(p.targetPerS)} | ${int(p.opsPerS)} | ${us(p.p50Us)} | ${us(p.p99Us)} | ${int(p.maxOutstanding)} | ${int(p.failed)} | ${p.scavenges} (${p.longestScavengeMs.toFixed(1)} ms) |`,
    );
  }
  return lines.join("\n");
}

export function workersTable(rows: readonly WorkersRow[]): string {
  const lines = [
    "| gateway | connections | answers/s | p50 | p99 | refused | errors | gateway CPU / answer |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const r of rows) {
    const res = r.result;
    lines.push(
      `| ${r.label} | ${r.connections} | ${int(res.ok / res.seconds)} | ${res.okP50Ms.toFixed(2)} ms | ${res.okP99Ms.toFixed(2)} ms | ${int(res.refused)} | ${int(res.errors + res.other)} | ${us(r.gatewayCpuMsPerAnswer * 1000)} |`,
    );
  }
  return lines.join("\n");
}

export interface Verdict {
  target: string;
  measured: string;
  met: boolean | undefined;
}

/** Issue 9's speed targets, judged from the run's own numbers (undefined = not measured). */
export function verdicts(rows: readonly LibraryRow[], subject: string, peer: string): Verdict[] {
  const me = rows.find((r) => r.name === subject);
  const them = rows.find((r) => r.name === peer);
  const p = me?.paced;
  const paceOk = p !== undefined && p.failed === 0 && p.opsPerS >= 0.98 * p.targetPerS;
  const mine64 = me?.byCallers.get(64)?.opsPerS;
  const theirs64 = them?.byCallers.get(64)?.opsPerS;
  return [
    {
      target: "grant p99 ≤ 1 ms at 5,000 grants/s",
      measured:
        p === undefined
          ? "not run"
          : `p99 ${us(p.p99Us)} at ${int(p.opsPerS)} grants/s achieved (${int(p.failed)} failed)`,
      met: p === undefined ? undefined : paceOk && p.p99Us <= 1000,
    },
    {
      target: "one round trip per grant",
      measured:
        me?.count === undefined
          ? "not counted"
          : `${per(me.count.beforeGrantPerGrant)} command(s) waited for per grant; ${per(me.count.clientPerGrant)} sent per grant + release`,
      // A heartbeat (one per lease_ttl ÷ 3) that falls inside a grant's window adds a few
      // thousandths; two round trips per grant would read 2.00.
      met: me?.count === undefined ? undefined : me.count.beforeGrantPerGrant < 1.05,
    },
    {
      target: `throughput at 64 callers ahead of ${peer}`,
      measured:
        mine64 === undefined || theirs64 === undefined
          ? "not run"
          : `${int(mine64)} vs ${int(theirs64)} ops/s (${x(mine64 / theirs64)})`,
      met: mine64 === undefined || theirs64 === undefined ? undefined : mine64 > theirs64,
    },
  ];
}

export function verdictTable(v: readonly Verdict[]): string {
  const lines = ["| target | measured | met |", "|---|---|---|"];
  for (const row of v)
    lines.push(
      `| ${row.target} | ${row.measured} | ${row.met === undefined ? "not measured" : row.met ? "met ✓" : "not met ✗"} |`,
    );
  return lines.join("\n");
}
