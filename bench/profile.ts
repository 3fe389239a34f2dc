/**
 * One sluice workload in a loop, for a CPU profile (not part of `npm run bench`):
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile.ts a|b|c|s [seconds] [peer]
 *
 * a = uncontended acquire → release, b = 100k tasks at once (limit 64), c = the same with
 * three priorities, s = (b) in small bursts of 1,000: the backlog dies young, so the garbage
 * collector does little and what is left is the code's own cost per task (b's "mutator"). Prints
 * ops/s; open the .cpuprofile in Chrome DevTools or summarize it.
 */
import { PEERS } from "./peers.js";

const which = process.argv[2] ?? "b";
const seconds = Number(process.argv[3] ?? 5);
const peer = PEERS.find((p) => p.name === (process.argv[4] ?? "sluice"))!;
const end = performance.now() + seconds * 1000;
let ops = 0;
let ns = 0n;
const cpu0 = process.cpuUsage();
while (performance.now() < end) {
  if (which === "a") {
    ns += await peer.uncontended(1_000_000);
    ops += 1_000_000;
  } else if (which === "s") {
    for (let i = 0; i < 1_000; i++) ns += await peer.burst(1_000, 64);
    ops += 1_000_000;
  } else {
    ns += which === "b" ? await peer.burst(100_000, 64) : await peer.burstRanked!(100_000, 64);
    ops += 100_000;
  }
}
const cpu = process.cpuUsage(cpu0);
const cpuS = (cpu.user + cpu.system) / 1e6;
console.log(
  `${peer.name} ${which}: ${Math.round((ops * 1e9) / Number(ns)).toLocaleString("en")} ops/s wall, ` +
    `${Math.round(ops / cpuS).toLocaleString("en")} ops per CPU-second`,
);
