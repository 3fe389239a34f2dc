/**
 * `npm run bench`: sluice's core against its peers, side by side, in one run (docs/bench.md).
 *
 *   (a) uncontended acquire → release, sequential, ops/s
 *   (b) 100,000 tasks submitted at once against limit 64 (task: `await null`), ops/s to the last
 *   (c) the same with priorities round-robin interactive / default / bulk
 *   (d) heap bytes per queued waiter at 100,000 waiters (child process per peer, bench/heap.ts)
 *   (e) sluice alone: release → grant hand-off p99 with 10,000 waiters queued (bench/latency.ts)
 *   (f) sluice alone, issue 24: (b) and (c) over 100 keys and (e) over 1,000 keys, beside no key
 *       (bench/fair-keys.ts)
 *
 * Method: one idle resident instance of each peer kept for the whole run (`keepResidents`; off
 * with `--no-resident`), one warm-up per peer, then 3 runs interleaved across peers (a, b, c),
 * median reported; each measurement times a fresh instance, gc() before it. Not part of `npm test`.
 */
import { execFileSync } from "node:child_process";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { fairKeys, fairKeysRows } from "./fair-keys.js";
import { grantLatency, type LatencyResult } from "./latency.js";
import { keepResidents, PEERS, type Peer } from "./peers.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const RUNS = 3;
const LIMIT = 64;
const BURST = 100_000;
const WAITERS = 100_000;
/** (a) each run lasts about this long per peer. */
const UNCONTENDED_MS = 250;
/** Libraries compared against sluice in the (a) target (cockatiel and the floor are not). */
const A_RIVALS = ["p-limit", "p-queue", "bottleneck", "async-sema"];

const quick = process.argv.includes("--quick");
const resident = !process.argv.includes("--no-resident");
const burstN = (p: Peer, n: number) => Math.min(n, p.burstCap ?? n);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const opsPerSec = (n: number, ns: bigint) => (n * 1e9) / Number(ns);
const log = (s: string) => process.stderr.write(`${s}\n`);

/** (a) calibration: double n until a run takes ≥ 25 ms, then size it to UNCONTENDED_MS. */
async function calibrate(p: Peer): Promise<number> {
  let n = 16;
  for (;;) {
    const ms = Number(await p.uncontended(n)) / 1e6;
    if (ms >= 25) return Math.max(16, Math.round((n * UNCONTENDED_MS) / ms));
    n *= 2;
  }
}

type Kind = "a" | "b" | "c";
interface Row {
  /** Wall-clock ops/s per run. */
  a: number[];
  b: number[];
  c: number[];
  /** Ops per second of process CPU time (user + system) per run: steadier on a shared machine. */
  cpu: Record<Kind, number[]>;
  d: number | undefined;
  drainMs: number | null;
}

/** Runs one measurement; records wall ops/s and ops per CPU-second. */
async function measure(row: Row, k: Kind, n: number, run: () => Promise<bigint>): Promise<void> {
  gc();
  const c0 = process.cpuUsage();
  const ns = await run();
  const cpu = process.cpuUsage(c0);
  row[k].push(opsPerSec(n, ns));
  row.cpu[k].push((n * 1e6) / (cpu.user + cpu.system));
}

async function main(): Promise<void> {
  const started = performance.now();
  const loadBefore = loadavg()[0]!;
  const rows = new Map<string, Row>(
    PEERS.map((p) => [
      p.name,
      { a: [], b: [], c: [], cpu: { a: [], b: [], c: [] }, d: undefined, drainMs: null },
    ]),
  );
  const burst = quick ? 20_000 : BURST;
  if (resident) keepResidents();

  log(`warm-up (${PEERS.length} peers)…`);
  const aN = new Map<string, number>();
  for (const p of PEERS) {
    aN.set(p.name, await calibrate(p));
    await p.burst(Math.min(10_000, burstN(p, burst) / 5), LIMIT);
    if (p.burstRanked) await p.burstRanked(Math.min(10_000, burstN(p, burst) / 5), LIMIT);
  }

  for (let run = 1; run <= RUNS; run++) {
    log(`run ${run}/${RUNS}: (a) uncontended`);
    for (const p of PEERS) {
      const n = aN.get(p.name)!;
      await measure(rows.get(p.name)!, "a", n, () => p.uncontended(n));
    }
    log(`run ${run}/${RUNS}: (b) ${burst.toLocaleString("en")} at once`);
    for (const p of PEERS) {
      const n = burstN(p, burst);
      await measure(rows.get(p.name)!, "b", n, () => p.burst(n, LIMIT));
    }
    log(`run ${run}/${RUNS}: (c) three priorities`);
    for (const p of PEERS) {
      const ranked = p.burstRanked;
      if (ranked === undefined) continue;
      const n = burstN(p, burst);
      await measure(rows.get(p.name)!, "c", n, () => ranked(n, LIMIT));
    }
  }

  log("(d) heap per waiter, one child process per peer");
  const heapScript = fileURLToPath(new URL("./heap.ts", import.meta.url));
  for (const p of PEERS) {
    const out = execFileSync(
      process.execPath,
      ["--expose-gc", "--import", "tsx", heapScript, p.name, String(quick ? 20_000 : WAITERS)],
      { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] },
    );
    const r = JSON.parse(out.trim().split("\n").pop()!) as { bytesPerWaiter: number; drainMs: number | null };
    rows.get(p.name)!.d = r.bytesPerWaiter;
    rows.get(p.name)!.drainMs = r.drainMs;
  }

  log("(e) sluice grant latency, 10,000 queued");
  gc();
  const lats: LatencyResult[] = [];
  for (let run = 0; run < RUNS; run++) lats.push(await grantLatency(10_000, 10_000, 2_000));
  const e = lats.sort((x, y) => x.p99Us - y.p99Us)[1]!;

  report(rows, e, burst, (performance.now() - started) / 1000, loadBefore);

  // Issue 24: (b), (c) with the tasks over 100 keys and (e) over 1,000 keys, beside no key.
  log("(f) sluice with keys: (b), (c) over 100 keys, grant latency over 1,000 keys");
  const f = await fairKeys(quick, true);
  console.log(`\nIssue 24, fair queuing (median of 3, interleaved):\n\n${fairKeysRows(f).join("\n")}`);
}

function fmtOps(x: number | undefined): string {
  if (x === undefined) return "—";
  if (x >= 1e6) return `${(x / 1e6).toFixed(2)}M`;
  if (x >= 1e4) return `${Math.round(x / 1e3)}k`;
  if (x >= 1e3) return `${(x / 1e3).toFixed(1)}k`;
  return `${Math.round(x)}`;
}

type Source = "wall" | "cpu";

function report(
  rows: Map<string, Row>,
  e: LatencyResult,
  burst: number,
  seconds: number,
  loadBefore: number,
): void {
  const med = (name: string, k: Kind, src: Source = "wall") => {
    const r = rows.get(name)!;
    const xs = src === "wall" ? r[k] : r.cpu[k];
    return xs.length === 0 ? undefined : median(xs);
  };
  const ratio = (x: number, y: number) => `${(x / y).toFixed(2)}×`;
  const bytes = (name: string) => rows.get(name)!.d!;
  const libs = PEERS.map((p) => p.name).filter((n) => n !== "sluice" && n !== "floor");
  const lines: string[] = [];

  const table = (src: Source) => {
    const unit = src === "wall" ? "ops/s" : "ops/CPU-s";
    const withE = src === "wall";
    lines.push(
      `| peer | (a) acquire+release, ${unit} | (b) ${burst / 1000}k at once, limit ${LIMIT}, ${unit} | (c) 3 priorities, ${unit} | (d) B/waiter |${withE ? " (e) grant p99 µs, 10k queued |" : ""}`,
    );
    lines.push(`|---|---:|---:|---:|---:|${withE ? "---:|" : ""}`);
    for (const p of PEERS) {
      const capped = p.burstCap !== undefined && p.burstCap < burst ? "¹" : "";
      const name = p.name === "floor" ? "floor (array FIFO; 3 arrays in c)" : p.name;
      const c = med(p.name, "c", src);
      const d = rows.get(p.name)!.d;
      lines.push(
        `| ${name} | ${fmtOps(med(p.name, "a", src))} | ${fmtOps(med(p.name, "b", src))}${capped} | ${
          c === undefined ? "—" : `${fmtOps(c)}${capped}`
        } | ${d === undefined ? "—" : Math.round(d)}${p.name === "bottleneck" ? "²" : ""} |${
          withE ? ` ${p.name === "sluice" ? e.p99Us.toFixed(1) : "—"} |` : ""
        }`,
      );
    }
    for (const [label, other] of [
      ["sluice ÷ floor", "floor"],
      ["sluice ÷ p-queue", "p-queue"],
    ] as const) {
      const cells = (["a", "b", "c"] as const).map((k) => ratio(med("sluice", k, src)!, med(other, k, src)!));
      lines.push(
        `| **${label}** | ${cells.join(" | ")} | ${ratio(bytes("sluice"), bytes(other))} |${withE ? " |" : ""}`,
      );
    }
  };

  lines.push(`Wall clock, median of ${RUNS} interleaved runs:`);
  lines.push("");
  table("wall");
  lines.push("");
  lines.push(
    `(e) sluice grant latency, release → granted continuation, ${e.queued.toLocaleString("en")} queued, ` +
      `${e.samples.toLocaleString("en")} hand-offs: p50 ${e.p50Us.toFixed(1)} µs, **p99 ${e.p99Us.toFixed(1)} µs**, ` +
      `max ${e.maxUs.toFixed(0)} µs (median run of ${RUNS})`,
  );
  lines.push("");
  const bn = PEERS.find((p) => p.name === "bottleneck")?.burstCap ?? 0;
  lines.push(
    `¹ bottleneck runs ${bn.toLocaleString("en")} tasks instead of ${burst.toLocaleString("en")} in (b)/(c) ` +
      "(it runs about 400 jobs/s whatever the limit); the figure is its rate over those.",
  );
  lines.push(
    "² bottleneck's waiters are measured but not drained (draining 100k takes minutes); the others drain fully.",
  );
  lines.push("");

  const verdicts = (src: Source) => {
    const s = (k: Kind) => med("sluice", k, src)!;
    const floorBy = (k: Kind) => med("floor", k, src)! / s(k);
    const behind = (k: Kind, names: readonly string[]) => names.filter((n) => (med(n, k, src) ?? 0) >= s(k));
    return {
      a: behind("a", A_RIVALS),
      b: behind("b", libs),
      c: behind("c", libs),
      bFloor: floorBy("b"),
      cFloor: floorBy("c"),
      s,
    };
  };
  const w = verdicts("wall");
  const cpu = verdicts("cpu");
  const mark = (ok: boolean) => (ok ? "✓" : "✗");
  const behindNote = (xs: string[]) => (xs.length ? `; behind ${xs.join(", ")}` : "");
  const cpuNote = (okWall: boolean, okCpu: boolean) =>
    okWall === okCpu ? "" : ` (per CPU-second: ${mark(okCpu)})`;
  lines.push("Targets (wall-clock medians):");
  lines.push(
    `- ${mark(w.a.length === 0)} (a) sluice ahead of ${A_RIVALS.join(", ")}: ${fmtOps(w.s("a"))} ops/s` +
      behindNote(w.a) +
      cpuNote(w.a.length === 0, cpu.a.length === 0),
  );
  const vsCockatiel = (src: Source) => med("sluice", "a", src)! / med("cockatiel", "a", src)!;
  lines.push(
    `- ${mark(vsCockatiel("wall") > 1)} (a) sluice ahead of cockatiel (issue 13): ${vsCockatiel("wall").toFixed(2)}× its pairs/s` +
      cpuNote(vsCockatiel("wall") > 1, vsCockatiel("cpu") > 1),
  );
  lines.push(
    `- ${mark(w.b.length === 0)} (b) sluice ahead of every peer: ${fmtOps(w.s("b"))} ops/s` +
      behindNote(w.b) +
      cpuNote(w.b.length === 0, cpu.b.length === 0),
  );
  lines.push(
    `- ${mark(w.bFloor <= 2)} (b) within 2× of the floor: the floor is ${w.bFloor.toFixed(2)}× sluice` +
      cpuNote(w.bFloor <= 2, cpu.bFloor <= 2),
  );
  lines.push(
    `- ${mark(w.c.length === 0)} (c) sluice ahead of every peer with priorities: ${fmtOps(w.s("c"))} ops/s` +
      behindNote(w.c) +
      cpuNote(w.c.length === 0, cpu.c.length === 0),
  );
  lines.push(
    `- ${mark(w.cFloor <= 2)} (c) within 2× of the floor: the floor is ${w.cFloor.toFixed(2)}× sluice` +
      cpuNote(w.cFloor <= 2, cpu.cFloor <= 2),
  );
  lines.push(
    `- ${mark(bytes("sluice") <= 300)} (d) ≤ 300 B per queued waiter: ${Math.round(bytes("sluice"))} B`,
  );
  lines.push(`- ${mark(e.p99Us < 100)} (e) grant p99 < 100 µs with 10,000 queued: ${e.p99Us.toFixed(1)} µs`);
  lines.push("");
  lines.push(
    "Per second of process CPU time (user + system, all threads; steadier than wall clock when the machine is " +
      "shared; bottleneck mostly sleeps on timers, so this view flatters it):",
  );
  lines.push("");
  table("cpu");
  lines.push("");
  lines.push("Every run, wall clock, in order (a · b · c):");
  lines.push("");
  for (const p of PEERS) {
    const r = rows.get(p.name)!;
    lines.push(
      `- ${p.name}: ${(["a", "b", "c"] as const).map((k) => r[k].map(fmtOps).join(" / ") || "—").join(" · ")}`,
    );
  }
  lines.push("");
  lines.push(
    `Node ${process.version}, ${process.platform}/${process.arch}, ${cpus().length} CPUs, ` +
      `load average ${loadBefore.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}, total ${seconds.toFixed(0)} s` +
      `${quick ? " (--quick: 20k tasks and waiters)" : ""}` +
      `${resident ? ", one idle resident instance per peer" : ", --no-resident"}.`,
  );
  console.log(lines.join("\n"));
}

/**
 * `--pairs=N [--peer=NAME]`: only N uncontended acquire → release pairs of one peer (sluice by
 * default), after a fixed warm-up of 3 × 50,000, for an instruction count that the machine's load
 * cannot move (docs/bench.md):
 *
 *   SLUICE_CALLGRIND=1 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p \
 *     node --import tsx bench/core.bench.ts --pairs=200000
 *
 * dumps callgrind's counts just before and just after the measured pairs (`callgrind_control
 * -d`): the last dump's `summary:` ÷ N is the instructions of one pair.
 */
async function pairs(n: number, peerName: string): Promise<void> {
  const peer = PEERS.find((p) => p.name === peerName);
  if (peer === undefined)
    throw new Error(`--peer=${peerName}: no such peer (${PEERS.map((p) => p.name).join(", ")})`);
  // Warm-up, a fixed size, on three instances in turn (each call makes a new one): the JIT's
  // tiers settle, and so do the deoptimizations a new instance's first calls cause, before the
  // measured pairs. With one warm-up instance, optimized code compiled for it was thrown away
  // and recompiled inside the measured window, and that compilation (on V8's background thread,
  // which callgrind counts) moved the count by ±300 instructions a pair from run to run.
  for (let i = 0; i < 3; i++) await peer.uncontended(50_000);
  // Under callgrind, dump the counts before and after the measured pairs: the second dump is
  // the pairs alone (start-up, compilation and warm-up are in the first).
  const dump = () => {
    if (process.env.SLUICE_CALLGRIND === "1") execFileSync("callgrind_control", ["-d", String(process.pid)]);
  };
  dump();
  const ns = await peer.uncontended(n);
  dump();
  log(`${peer.name}: ${n.toLocaleString("en")} pairs in ${(Number(ns) / 1e6).toFixed(1)} ms`);
}

/**
 * `--bursts=N [--peer=NAME]`: only N runs of (b) — 100,000 tasks at once, limit 64 — after 3
 * warm-up runs, dumped like `--pairs`: the last dump's `summary:` ÷ (N × 100,000) is the
 * instructions of one task, the garbage collector's included (it is most of (b)).
 */
async function bursts(n: number, peerName: string): Promise<void> {
  const peer = PEERS.find((p) => p.name === peerName);
  if (peer === undefined)
    throw new Error(`--peer=${peerName}: no such peer (${PEERS.map((p) => p.name).join(", ")})`);
  for (let i = 0; i < 3; i++) await peer.burst(100_000, 64);
  const dump = () => {
    if (process.env.SLUICE_CALLGRIND === "1") execFileSync("callgrind_control", ["-d", String(process.pid)]);
  };
  dump();
  let ns = 0n;
  for (let i = 0; i < n; i++) ns += await peer.burst(100_000, 64);
  dump();
  log(`${peer.name}: ${n} × 100,000 tasks in ${(Number(ns) / 1e6).toFixed(1)} ms`);
}

const pairsArg = process.argv.find((a) => a.startsWith("--pairs="));
const burstsArg = process.argv.find((a) => a.startsWith("--bursts="));
const peerArg = process.argv.find((a) => a.startsWith("--peer="))?.slice(7) ?? "sluice";
if (pairsArg !== undefined) await pairs(Number(pairsArg.slice(8)), peerArg);
else if (burstsArg !== undefined) await bursts(Number(burstsArg.slice(9)), peerArg);
else {
  await main();
  // (f)'s resident instances keep queued waiters (1 h timeouts): without this the script stays up
  // an hour after its tables, then dies on their timeouts, and `npm run bench` never reaches
  // fleet-sim.ts (seen on this session's first run).
  process.exit(0);
}
