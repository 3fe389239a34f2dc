/**
 * The side-by-side table `sluice load` prints: the same clients through sluice and straight to
 * the pods, row by row — that contrast is the point — then each client group, the checks, and
 * the baseline's verdict.
 */
import type { BaselineComparison } from "./compare.js";
import { fmtMs, fmtPct } from "./profiles/format.js";
import type { Receipt } from "./receipt.js";
import { sluiceRun } from "./receipt.js";
import type { Percentiles, RunStats } from "./stats.js";
import type { LoadProfile } from "./types.js";

type Row = [label: string, value: (r: RunStats) => string];

const pair = (p: Percentiles | null, a: keyof Percentiles, b: keyof Percentiles) =>
  p === null ? "–" : `${fmtMs(p[a])} / ${fmtMs(p[b])}`;

const ROWS: Row[] = [
  ["offered (requests)", (r) => `${r.offered}`],
  [
    "completed, every byte as sent",
    (r) => `${r.completed} (${fmtPct(r.offered ? r.completed / r.offered : 0)})`,
  ],
  ["not completed, by last answer", (r) => codes(r.refused)],
  ["attempts (retries included)", (r) => `${r.attempts}`],
  ["answered latency mean / p99", (r) => pair(r.latency_ms, "mean", "p99")],
  ["end to end mean / max (retries, waits)", (r) => pair(r.end_to_end_ms, "mean", "max")],
  ["queue wait p50 / p99", (r) => pair(r.queue_wait_ms, "p50", "p99")],
  [
    "sluice refusals: answered in p50 / p99",
    (r) => (r.sluice_refusals === 0 ? "–" : `${pair(r.refusal_ms, "p50", "p99")}`),
  ],
  [
    "  … carrying Retry-After + sizing headers",
    (r) => (r.sluice_refusals === 0 ? "–" : `${r.refusals_with_sizing_headers}/${r.sluice_refusals}`),
  ],
  ["pod refusals (after warm-up)", (r) => `${r.pod_refusals} (${r.pod_refusals_after_warmup})`],
  ["pod 429 throttles", (r) => `${r.throttles}`],
  ["OOM events", (r) => `${r.oom_events}`],
  ["upstream max in flight (one pod)", (r) => `${r.upstream_max_inflight}`],
  [
    "sequences on the box at once",
    (r) =>
      Object.entries(r.machine_max_running)
        .map(([m, n]) => `${m} ${n}`)
        .join(", ") || "–",
  ],
  ["pod utilization (after warm-up)", (r) => fmtPct(r.utilization)],
  ["leaked reservations", (r) => (r.leaked_reservations === null ? "–" : `${r.leaked_reservations}`)],
  ["bytes mismatches", (r) => `${r.bytes_mismatches}`],
  ["run time", (r) => fmtMs(r.duration_ms)],
];

/** Rows of profiles with a provider account (provider-tokens): what the provider counted, per minute. */
const ACCOUNT_ROWS: Row[] = [
  [
    "provider 429s (tokens / requests limit)",
    (r) => perAccount(r, (a) => `${a.throttled.tokens} / ${a.throttled.requests}`),
  ],
  ["provider's tpm", (r) => perAccount(r, (a) => kTokens(a.tpm))],
  [
    "tokens/min at the provider, minute by minute",
    (r) => perAccount(r, (a) => a.tokens_per_minute.map(kTokens).join(" ")),
  ],
  [
    "  … first minute (bucket starts full: ≤ 2 × tpm)",
    (r) => perAccount(r, (a) => kTokens(a.first_minute_tokens)),
  ],
  [
    "  … minutes after it: peak / mean",
    (r) => perAccount(r, (a) => `${kTokens(a.peak_minute_tokens)} / ${kTokens(a.mean_minute_tokens)}`),
  ],
  [
    "tokens/min asked of it (429s included)",
    (r) => perAccount(r, (a) => a.tokens_asked_per_minute.map(kTokens).join(" ")),
  ],
  [
    "  … sustained: (asked − tpm) ÷ minutes offered",
    (r) => perAccount(r, (a) => kTokens(a.sustained_asked_per_minute)),
  ],
];

/** `1, +1 at 0.6 1.2 … s: 10 by 5.5 s` (real seconds from the run's start); `–` without an autoscaler. */
function replicasOverTime(r: RunStats): string {
  const steps = r.replicas_over_time;
  if (steps === undefined || steps.length === 0) return "–";
  const first = steps[0]!;
  const last = steps.at(-1)!;
  if (steps.length === 1) return `${first.replicas} (none added)`;
  const at = steps.slice(1).map((s) => (s.at_ms / 1000).toFixed(1));
  return `${first.replicas}, +1 at ${at.join(" ")} s: ${last.replicas} by ${at.at(-1)} s`;
}

/** One value per provider account of a run, `; `-separated. */
function perAccount(r: RunStats, value: (a: RunStats["accounts"][number]) => string): string {
  const accounts = r.accounts ?? []; // absent in receipts written before provider accounts
  return accounts.length === 0 ? "–" : accounts.map(value).join("; ");
}

/** `60.0k` tokens; `–` for none. */
function kTokens(n: number | null): string {
  if (n === null) return "–";
  return n >= 1000 ? `${(n / 1000).toFixed(1)}k` : `${n}`;
}

/** The whole report of a receipt, as lines. */
export function renderReport(profile: LoadProfile, receipt: Receipt, receiptPath: string | null): string[] {
  const sluice = sluiceRun(receipt);
  const direct = receipt.direct;
  const [sluiceHead, directHead] = profile.labels ?? ["through sluice", "straight to the pods"];
  // A profile with a `honouring` run shows it between the other two (older receipts have none).
  const honouring = profile.honouring === undefined ? undefined : (receipt.retry_after_honoured ?? null);
  const runs = honouring === undefined ? [sluice, direct] : [sluice, honouring, direct];
  const heads =
    honouring === undefined ? [sluiceHead, directHead] : [sluiceHead, profile.honouring!.label, directHead];
  // A profile with an `alone` run shows it last (`completionMeaning` reads the honouring run at index 1).
  if (profile.alone !== undefined) {
    runs.push(receipt.alone ?? null);
    heads.push(profile.alone.label);
  }
  const lines: string[] = [];
  lines.push(`sluice load ${profile.name} — seed ${profile.seed}: ${profile.title}`);
  for (const s of profile.story) lines.push(`  ${s}`);
  lines.push(
    `  time scale ${receipt.time_scale} (1 s of the incident runs in ${fmtMs(1000 * receipt.time_scale)}); ` +
      `${receipt.hardware.cores} × ${receipt.hardware.cpu_model}, Node ${receipt.hardware.node}`,
  );
  lines.push("");
  const table: string[][] = [["", ...heads]];
  // Older receipts have no `accounts`: their runs had no provider account.
  const withAccounts = runs.some((r) => (r?.accounts ?? []).length > 0);
  // Only an autoscaled profile (autoscale) has replicas over time.
  const scaled = runs.some((r) => r?.replicas_over_time !== undefined);
  const rows: Row[] = [
    ...ROWS,
    ...(scaled ? [["gateway replicas over time", replicasOverTime] as Row] : []),
    ...(withAccounts ? ACCOUNT_ROWS : []),
  ];
  for (const [label, value] of rows)
    table.push([label, ...runs.map((r) => (r === null ? "(not run)" : value(r)))]);
  table.push([""]);
  table.push(["by client group: completed / offered, latency mean, queue p99"]);
  for (const name of profile.groups.map((g) => g.name)) {
    table.push([
      `  ${name}`,
      ...runs.map((r) => {
        const g = r?.groups[name];
        if (g === undefined) return "–";
        const q = g.queue_wait_ms === null ? "" : `, q ${fmtMs(g.queue_wait_ms.p99)}`;
        const w = g.waves === undefined ? "" : `; whole waves ${g.waves.completed}/${g.waves.offered}`;
        return `${g.completed}/${g.offered}, ${fmtMs(g.latency_ms?.mean)}${q}${w}`;
      }),
    ]);
  }
  table.push(...tenantRows(profile, runs));
  lines.push(...columns(table));
  lines.push(completionMeaning(profile, runs, heads));
  for (const r of runs) if (r?.error !== undefined) lines.push(`the ${r.target} run failed: ${r.error}`);
  if (receipt.error !== undefined) lines.push(`the run failed: ${receipt.error}`);
  lines.push("", "checks:");
  for (const c of receipt.checks)
    lines.push(`  ${c.met ? "ok  " : "FAIL"} ${c.name}: ${c.value} (target ${c.target})`);
  const baseline = receipt.baseline as BaselineComparison | undefined;
  if (baseline !== undefined) lines.push("", ...renderComparison(baseline));
  lines.push("");
  if (receiptPath !== null) lines.push(`receipt: ${receiptPath}`);
  lines.push(receipt.ok ? "result: every check met" : "result: FAILED (see the checks above)");
  return lines;
}

/**
 * Rows per tenant (groups with `tenant`: `noisy-neighbour`): at the client, success and the wait
 * for the answer; at the pods, by the pods' own counts, calls completed, tokens and the share of
 * the slot time. None for a profile without tenants.
 */
function tenantRows(profile: LoadProfile, runs: (RunStats | null)[]): string[][] {
  const tenants = profile.groups.filter((g) => g.tenant !== undefined);
  if (tenants.length === 0) return [];
  const rows: string[][] = [
    [""],
    ["by tenant, at the client: success, wait p50 / p99 (sent → answer or refusal)"],
  ];
  for (const g of tenants) {
    rows.push([
      `  ${g.name}`,
      ...runs.map((r) => {
        const s = r?.groups[g.name];
        return s === undefined ? "–" : `${fmtPct(s.success_rate)}, ${pair(s.wait_ms ?? null, "p50", "p99")}`;
      }),
    ]);
  }
  rows.push(["by tenant, at the pods: completed, tokens (prompt + completion), share of slot time"]);
  for (const g of tenants) {
    rows.push([
      `  ${g.name}`,
      ...runs.map((r) => {
        const pods = r?.pods ?? [];
        const all = pods.flatMap((p) => Object.values(p.tenants ?? {}));
        const mine = pods.flatMap((p) =>
          p.tenants?.[g.tenant!.id] === undefined ? [] : [p.tenants[g.tenant!.id]!],
        );
        if (mine.length === 0) return "–";
        const sum = (xs: typeof all, f: (t: (typeof all)[number]) => number) =>
          xs.reduce((n, t) => n + f(t), 0);
        const slot = sum(all, (t) => t.slot_ms);
        const tokens = sum(mine, (t) => t.prompt_tokens + t.completion_tokens);
        const share = slot === 0 ? 0 : sum(mine, (t) => t.slot_ms) / slot;
        return `${sum(mine, (t) => t.completed)}, ${kTokens(tokens)}, ${fmtPct(share)}`;
      }),
    ]);
  }
  return rows;
}

/** The baseline's verdict, as lines. */
export function renderComparison(c: BaselineComparison): string[] {
  const lines = [`baseline ${c.file}: ${c.verdict}`];
  for (const s of c.settings_changed) lines.push(`  setting changed: ${s}`);
  for (const h of c.hardware_changed) lines.push(`  hardware changed: ${h}`);
  for (const s of c.software_changed) lines.push(`  software changed: ${s}`);
  if (c.verdict === "different profile") return lines;
  if (c.verdict !== "comparable") {
    lines.push("  not judged as regressions: the differences below may come from what changed above");
  }
  for (const d of c.deltas) {
    if (d.baseline === d.now) continue;
    lines.push(`  ${d.worse ? "worse " : "      "} ${d.metric}: ${d.baseline ?? "–"} → ${d.now ?? "–"}`);
  }
  if (c.verdict === "comparable") {
    lines.push(c.regressions.length === 0 ? "  no regression" : `  REGRESSION: ${c.regressions.join("; ")}`);
  }
  return lines;
}

/**
 * One line under the table: what "completed" means on each side — answered at the first attempt,
 * or after how many retries and of what kind — so a side that completes more only by retrying
 * (seed 000's orchestrator: five attempts a page) does not read as the better one.
 */
export function completionMeaning(profile: LoadProfile, runs: (RunStats | null)[], heads: string[]): string {
  const parts = runs.flatMap((r, i) => {
    if (r === null) return [];
    const retries = r.attempts - r.offered;
    const done = `${n(r.completed)} of ${n(r.offered)}`;
    if (retries === 0) return [`${heads[i]}: ${done} at the first answer, nothing retried`];
    const perRequest = (r.attempts / Math.max(1, r.offered)).toFixed(1);
    const policies = profile.groups.flatMap((g) => {
      const p = i === 1 && profile.honouring !== undefined ? profile.honouring.retry : g.retry?.[r.target];
      return p === undefined ? [] : [p];
    });
    const how: string[] = [];
    if (r.sluice_refusals > 0 && policies.some((p) => p.sluiceRefusals))
      how.push("each refusal retried after its Retry-After");
    const upstream = policies.find((p) => p.upstreamFailures);
    const failures = Object.values(r.failed_attempts).reduce((a, b) => a + b, 0) - r.sluice_refusals;
    if (upstream !== undefined && failures > 0) {
      const { baseMs, maxMs } = upstream.backoff;
      how.push(`failures retried with backoff ${baseMs / 1000} s → ${maxMs / 1000} s (seed time)`);
    }
    const tail = how.length === 0 ? "" : `, ${how.join(", ")}`;
    return [`${heads[i]}: ${done} after ${n(retries)} retries (${perRequest} attempts a request)${tail}`];
  });
  return `completed means — ${parts.join("; ")}`;
}

/** `16,073`. */
function n(x: number): string {
  return x.toLocaleString("en");
}

function codes(counts: Record<string, number>): string {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  if (entries.length === 0) return "0";
  return entries.map(([k, n]) => `${k} ${n}`).join(", ");
}

/** Aligns the cells in columns; a one-cell row is a heading and sets no width. */
function columns(rows: string[][]): string[] {
  const cells = rows.filter((r) => r.length > 1);
  const widths = rows[0]!.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  return rows.map((r) =>
    r
      .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]! + 2)))
      .join("")
      .trimEnd(),
  );
}
