/**
 * `npm run bench`'s (b) alone, repeated: one 100,000-task burst at limit 64 per measurement, a
 * fresh instance each time, `gc()` before it — the peers interleaved, medians printed, with the
 * garbage collector's pauses in each burst (not part of `npm run bench`):
 *
 *   node --import tsx bench/oneshot.ts [PEERS] [ROUNDS] [--no-resident]
 *
 * PEERS: comma-separated (default `sluice,async-sema`); ROUNDS: default 8. Residents as in
 * `npm run bench` (`keepResidents`, peers.ts) unless `--no-resident`. With `--trace-deopt`,
 * `grep -c "marking dependent code"` counts the optimized functions V8 threw away.
 */
import { constants, type PerformanceEntry, PerformanceObserver } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { keepResidents, PEERS } from "./peers.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const args = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const names = (args[0] ?? "sluice,async-sema").split(",");
const rounds = Number(args[1] ?? 8);
const resident = !process.argv.includes("--no-resident");
const peers = names.map((name) => {
  const peer = PEERS.find((p) => p.name === name);
  if (peer === undefined) throw new Error(`no such peer ${name} (${PEERS.map((p) => p.name).join(", ")})`);
  return peer;
});
if (resident) keepResidents();

/** Scavenge and mark-compact pause time in the current burst, ms. */
const pauses = { minor: 0, major: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    // Node 20 puts the collection's kind in `detail` (not in PerformanceEntry's type).
    const kind = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
    if (kind === constants.NODE_PERFORMANCE_GC_MINOR) pauses.minor += entry.duration;
    else pauses.major += entry.duration;
  }
}).observe({ entryTypes: ["gc"] });
/** Lets the observer hear a burst's last collections before they are read. */
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 5));

for (const p of peers) await p.burst(10_000, 64);
const rows = new Map(names.map((n) => [n, { opsPerSec: [] as number[], gcMs: [] as number[] }]));
for (let round = 0; round < rounds; round++) {
  for (const p of peers) {
    gc();
    await settle();
    pauses.minor = 0;
    pauses.major = 0;
    const ns = await p.burst(100_000, 64);
    await settle();
    const row = rows.get(p.name)!;
    row.opsPerSec.push((100_000 * 1e9) / Number(ns));
    row.gcMs.push(pauses.minor + pauses.major);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const k = (x: number) => `${Math.round(x / 1e3)}k`;
for (const [name, row] of rows)
  console.log(
    `${name.padEnd(11)} median ${k(median(row.opsPerSec))} ops/s, GC pauses ${median(row.gcMs).toFixed(0)} ms a burst` +
      ` | ${row.opsPerSec.map(k).join(" ")}`,
  );
if (names.length > 1) {
  const first = median(rows.get(names[0]!)!.opsPerSec);
  const second = median(rows.get(names[1]!)!.opsPerSec);
  console.log(
    `${names[0]} ÷ ${names[1]}: ${(first / second).toFixed(2)}× (${resident ? "residents" : "--no-resident"})`,
  );
}
