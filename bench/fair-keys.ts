/**
 * Issue 24's speed lines: sluice's (b) and (c) of `core.bench.ts` with the tasks spread over 100
 * keys in the class (weights 1–5, so fair queuing orders them), beside the same without a key; and
 * (e)'s grant latency with 10,000 waiters over 1,000 keys beside 10,000 with none.
 *
 *   node --import tsx bench/fair-keys.ts [--quick] [--no-weights]
 *   SLUICE_CALLGRIND=1 valgrind --tool=callgrind [--cache-sim=yes] --callgrind-out-file=/tmp/cg.%p \
 *     node --perf-basic-prof --import tsx bench/fair-keys.ts --burst=KEYS
 *
 * `--burst=KEYS` runs three warm-up (b) bursts of 20,000 tasks over KEYS keys (0: none) and then
 * one more with callgrind's counts dumped just before and after it (`callgrind_control -d`): the
 * last dump ÷ 20,000 is one task's instructions and simulated cache misses.
 *
 * `--no-weights` leaves `weight` out of the keys (for a tree before issue 24, whose options refuse
 * it). `npm run bench` prints the same rows under its table (`fairKeysRows`). Runs interleaved,
 * gc() before each, median of 3 reported.
 */
import { execFileSync } from "node:child_process";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Governor, type Priority } from "../src/index.js";
import { grantLatency, keyOptions, type LatencyResult } from "./latency.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const now = process.hrtime.bigint;
const PRIORITIES: readonly Priority[] = ["interactive", "default", "bulk"];
const LIMIT = 64;
const RUNS = 3;

/** (b) or, `ranked`, (c) of core.bench.ts: `n` tasks at once, each task's key round-robin over `keys`. */
async function burst(n: number, keys: number, ranked: boolean, weights: boolean): Promise<bigint> {
  const gov = new Governor({
    lanes: { l: { limit: LIMIT, queueLimit: 200_000, queueTimeoutMs: 3_600_000, reserve: 0 } },
    ...(keys > 0 ? { keys: keyOptions(keys, weights) } : {}),
  });
  const names = Array.from({ length: keys }, (_, i) => `k${i}`);
  let left = n;
  let done!: () => void;
  const all = new Promise<void>((resolve) => {
    done = resolve;
  });
  const task = async (i: number) => {
    const priority = ranked ? PRIORITIES[i % 3]! : undefined;
    const lease = await gov.acquire("l", keys > 0 ? { priority, key: names[i % keys]! } : { priority });
    await null;
    lease.release();
    if (--left === 0) done();
  };
  const t0 = now();
  for (let i = 0; i < n; i++) void task(i);
  await all;
  const ns = now() - t0;
  gov.close();
  return ns;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (x: number) => `${Math.round(x / 1000)}k`;

export interface FairKeysResult {
  /** ops/s medians: (b) and (c) with no key and with 100 keys. */
  b: { none: number; keyed: number };
  c: { none: number; keyed: number };
  /** The same per CPU-second of the process (steadier on a shared machine). */
  cpu: { b: { none: number; keyed: number }; c: { none: number; keyed: number } };
  /** Grant latency: 10k waiters, no key; 10k over 1,000 keys. */
  e: { none: LatencyResult; keyed: LatencyResult };
}

/** The resident instances (see `keepResidents` in peers.ts): kept for the life of the process. */
const residents: unknown[] = [];

/**
 * One idle Governor without keys and one with two keys' waiters queued behind a held slot, kept
 * for the life of the process: the fair queue's classes (its flows' lists, the heaps) exist only
 * while flows wait, and without a live instance the gc() before each measurement would free their
 * shapes and throw away the optimized code that checks them (docs/bench.md, "Issue 13, sixth pass").
 */
async function keepResidents(weights: boolean): Promise<void> {
  if (residents.length > 0) return;
  const plain = new Governor({ lanes: { l: { limit: 64, queueLimit: 10, reserve: 0 } } });
  const keyed = new Governor({
    lanes: { l: { limit: 1, queueLimit: 10, queueTimeoutMs: 3_600_000, reserve: 0 } },
    keys: keyOptions(2, weights),
  });
  residents.push(plain, keyed, await keyed.acquire("l", { key: "k0" }));
  for (const key of ["k0", "k1"]) residents.push(keyed.acquire("l", { key }));
}

/** Measures the rows (interleaved: no key, then 100 keys, in each run). */
export async function fairKeys(quick: boolean, weights: boolean): Promise<FairKeysResult> {
  await keepResidents(weights);
  const n = quick ? 20_000 : 100_000;
  const cpu = {
    b: { none: [] as number[], keyed: [] as number[] },
    c: { none: [] as number[], keyed: [] as number[] },
  };
  const ops = {
    b: { none: [] as number[], keyed: [] as number[] },
    c: { none: [] as number[], keyed: [] as number[] },
  };
  // warm-up
  for (const ranked of [false, true]) for (const keys of [0, 100]) await burst(n / 5, keys, ranked, weights);
  for (let run = 0; run < RUNS; run++)
    for (const [kind, ranked] of [
      ["b", false],
      ["c", true],
    ] as const)
      for (const [which, keys] of [
        ["none", 0],
        ["keyed", 100],
      ] as const) {
        gc();
        const c0 = process.cpuUsage();
        const ns = await burst(n, keys, ranked, weights);
        const c = process.cpuUsage(c0);
        ops[kind][which].push((n * 1e9) / Number(ns));
        cpu[kind][which].push((n * 1e6) / (c.user + c.system));
      }
  const lat: { none: LatencyResult[]; keyed: LatencyResult[] } = { none: [], keyed: [] };
  for (let run = 0; run < RUNS; run++) {
    gc();
    lat.none.push(await grantLatency(10_000, 10_000, 2_000));
    gc();
    lat.keyed.push(await grantLatency(10_000, 10_000, 2_000, 1_000, weights));
  }
  const mid = (xs: LatencyResult[]) => xs.sort((x, y) => x.p99Us - y.p99Us)[Math.floor(xs.length / 2)]!;
  return {
    b: { none: median(ops.b.none), keyed: median(ops.b.keyed) },
    c: { none: median(ops.c.none), keyed: median(ops.c.keyed) },
    cpu: {
      b: { none: median(cpu.b.none), keyed: median(cpu.b.keyed) },
      c: { none: median(cpu.c.none), keyed: median(cpu.c.keyed) },
    },
    e: { none: mid(lat.none), keyed: mid(lat.keyed) },
  };
}

/** The markdown rows `npm run bench` and this script print. */
export function fairKeysRows(r: FairKeysResult): string[] {
  const ratio = (x: number, y: number) => `${(x / y).toFixed(2)}×`;
  return [
    "| sluice, issue 24 | no key | 100 keys (weights 1–5) | 100 keys ÷ no key |",
    "|---|---:|---:|---:|",
    `| (b) ops/s | ${fmt(r.b.none)} | ${fmt(r.b.keyed)} | ${ratio(r.b.keyed, r.b.none)} |`,
    `| (c) 3 priorities, ops/s | ${fmt(r.c.none)} | ${fmt(r.c.keyed)} | ${ratio(r.c.keyed, r.c.none)} |`,
    `| (b) ops/CPU-s | ${fmt(r.cpu.b.none)} | ${fmt(r.cpu.b.keyed)} | ${ratio(r.cpu.b.keyed, r.cpu.b.none)} |`,
    `| (c) ops/CPU-s | ${fmt(r.cpu.c.none)} | ${fmt(r.cpu.c.keyed)} | ${ratio(r.cpu.c.keyed, r.cpu.c.none)} |`,
    "",
    "| grant latency, 10k queued | p50 µs | p99 µs | max µs |",
    "|---|---:|---:|---:|",
    ...(
      [
        ["no key", r.e.none],
        ["over 1,000 keys", r.e.keyed],
      ] as const
    ).map(
      ([label, e]) => `| ${label} | ${e.p50Us.toFixed(1)} | ${e.p99Us.toFixed(1)} | ${e.maxUs.toFixed(0)} |`,
    ),
  ];
}

/** One (b) burst over `keys` keys under callgrind's counts, after three warm-ups (see the top). */
async function countedBurst(keys: number, weights: boolean): Promise<void> {
  const n = 20_000;
  for (let i = 0; i < 3; i++) await burst(n, keys, false, weights);
  const dump = () => {
    if (process.env.SLUICE_CALLGRIND === "1") execFileSync("callgrind_control", ["-d", String(process.pid)]);
  };
  dump();
  await burst(n, keys, false, weights);
  dump();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const counted = process.argv.find((a) => a.startsWith("--burst="));
  if (counted !== undefined) {
    await countedBurst(Number(counted.slice("--burst=".length)), !process.argv.includes("--no-weights"));
    process.exit(0);
  }
  const r = await fairKeys(process.argv.includes("--quick"), !process.argv.includes("--no-weights"));
  process.stdout.write(`${fairKeysRows(r).join("\n")}\n`);
  process.exit(0); // the resident instances' queued waiters (1 h timeouts) would keep it running
}
