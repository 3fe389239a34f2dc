/**
 * Summarizes a V8 `.cpuprofile` (from `node --cpu-prof`) as markdown: self time by area (sluice's
 * own files, node:http internals, undici, GC, idle), the top functions by self time, and the
 * inclusive time of sluice's own functions (src/** or dist/**), which is where a change to the request path
 * would pay off.
 *
 *   node --import tsx bench/gateway/profile.ts FILE.cpuprofile
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** sluice's own code: src/ through tsx, dist/, or the bench's build (.bench/gateway-dist/). */
const OWN = /\/(src|dist|gateway-dist)\/(.*)$/;

/** The path inside sluice's source or build root ("gateway/gateway.js"), or undefined. */
function ownPath(url: string): string | undefined {
  if (url.includes("node_modules")) return undefined;
  return OWN.exec(url)?.[2];
}

function shortUrl(url: string): string {
  if (url === "") return "";
  const own = ownPath(url);
  if (own !== undefined) return own;
  const nm = url.lastIndexOf("node_modules/");
  if (nm !== -1) return url.slice(nm + 13);
  return url.replace(/^file:\/\//, "");
}

function area(url: string, fn: string): string {
  if (url === "") return fn.startsWith("(") ? fn : "(native)";
  if (url.includes("node_modules/undici")) return "undici";
  if (url.includes("node_modules/pino") || url.includes("node_modules/thread-stream")) return "pino";
  if (url.includes("node_modules/prom-client")) return "prom-client";
  if (url.includes("node_modules/")) return "other packages";
  if (url.startsWith("node:internal/http") || url.startsWith("node:_http") || url.startsWith("node:http"))
    return "node:http";
  if (url.startsWith("node:internal/streams") || url.startsWith("node:stream")) return "node streams";
  if (url.startsWith("node:net") || url.startsWith("node:internal/stream_base")) return "node:net";
  if (url.startsWith("node:")) return "node (other)";
  const own = ownPath(url);
  if (own !== undefined) {
    const parts = own.split("/");
    return `sluice ${parts.length > 1 ? `${parts[0]}/` : parts[0]}`;
  }
  return "other";
}

/** Leaf frames that are not JavaScript work: syscalls, idle, GC, VM overhead. */
const NOT_JS = new Set([
  "(idle)",
  "(program)",
  "(garbage collector)",
  "writev",
  "writeBuffer",
  "writeUtf8String",
  "writeLatin1String",
  "read",
]);

const ms = (us: number) => (us / 1000).toFixed(0);
const pct = (us: number, total: number) => `${((us / total) * 100).toFixed(1)} %`;

/** Whether the profile has any of sluice's own frames (the tsx loader thread writes one too). */
export function isSluiceProfile(file: string): boolean {
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  return p.nodes.some((n) => ownPath(n.callFrame.url)?.startsWith("gateway/") === true);
}

export function summarizeProfile(file: string, top = 25): string {
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  // Time per sample: V8 puts the delta before a sample on it.
  const selfUs = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const id = p.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (p.timeDeltas[i + 1] ?? p.timeDeltas[i] ?? 0));
  }
  let total = 0;
  let idle = 0;
  const areas = new Map<string, number>();
  const fns = new Map<string, number>();
  const keyOf = (n: ProfileNode) =>
    `${n.callFrame.functionName || "(anonymous)"} ${shortUrl(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!;
    total += us;
    if (n.callFrame.functionName === "(idle)") idle += us;
    const a = area(n.callFrame.url, n.callFrame.functionName);
    areas.set(a, (areas.get(a) ?? 0) + us);
    const k = keyOf(n);
    fns.set(k, (fns.get(k) ?? 0) + us);
  }
  // Inclusive time of sluice's own functions: each sample counts once per function on its stack.
  // Samples in socket syscalls are left out: the profiler samples wall time, and on a shared
  // machine a process is often descheduled inside writev (the write wakes the peer).
  const incl = new Map<string, number>();
  let jsUs = 0;
  for (const [id, us] of selfUs) {
    if (NOT_JS.has(byId.get(id)!.callFrame.functionName)) continue;
    jsUs += us;
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!;
      if (ownPath(n.callFrame.url) === undefined) continue;
      const k = keyOf(n);
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + us);
    }
  }
  const busy = total - idle;
  const lines: string[] = [
    `Profile: ${ms(total)} ms sampled, ${ms(busy)} ms busy (not idle). Percentages are of busy time.`,
    "",
    "| area (self time) | ms | share |",
    "| --- | ---: | ---: |",
  ];
  for (const [a, us] of [...areas].filter(([a]) => a !== "(idle)").sort((x, y) => y[1] - x[1])) {
    lines.push(`| ${a} | ${ms(us)} | ${pct(us, busy)} |`);
  }
  lines.push("", "| function (self time) | ms | share |", "| --- | ---: | ---: |");
  for (const [k, us] of [...fns]
    .filter(([k]) => !k.startsWith("(idle)"))
    .sort((x, y) => y[1] - x[1])
    .slice(0, top)) {
    lines.push(`| \`${k}\` | ${ms(us)} | ${pct(us, busy)} |`);
  }
  lines.push(
    "",
    `Inclusive time of sluice's own functions, of ${ms(jsUs)} ms of samples outside socket syscalls, idle, GC and (program):`,
    "",
    "| sluice function (inclusive) | ms | share |",
    "| --- | ---: | ---: |",
  );
  for (const [k, us] of [...incl].sort((x, y) => y[1] - x[1]).slice(0, top)) {
    lines.push(`| \`${k}\` | ${ms(us)} | ${pct(us, jsUs)} |`);
  }
  return lines.join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (file === undefined) throw new Error("usage: profile.ts FILE.cpuprofile");
  process.stdout.write(`${summarizeProfile(file, Number(process.argv[3] ?? 25))}\n`);
}
