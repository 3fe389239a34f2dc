/**
 * What sluice's clock costs an event-loop turn (docs/bench.md, "Issue 13, fourth pass"): turns
 * driven by `setImmediate`, each reading the clock `reads` times, with `systemClock` (one reading
 * per turn, forgotten at `process.nextTick`) against a plain `performance.now()` per read.
 *
 *   node --import tsx bench/clock-turn.ts [reads per turn, default 5] [turns, default 300000]
 *
 * Prints what one read of `performance.now()` and of `Date.now()` costs (2M reads in a loop),
 * then CPU µs per turn for each clock, alternating, two rounds. A benchmark, not a test.
 */
import { systemClock } from "../src/core/clock.js";

const reads = Number(process.argv[2] ?? 5);
const turns = Number(process.argv[3] ?? 300_000);
const plain = (): number => Math.floor(performance.now());

async function run(now: () => number): Promise<number> {
  let sink = 0;
  let i = 0;
  const cpu0 = process.cpuUsage();
  await new Promise<void>((resolve) => {
    const step = (): void => {
      for (let k = 0; k < reads; k++) sink += now();
      if (++i < turns) setImmediate(step);
      else resolve();
    };
    step();
  });
  const cpu = process.cpuUsage(cpu0);
  if (sink === -1) console.log(sink); // the reads are used
  return (cpu.user + cpu.system) / turns;
}

/** Nanoseconds per call of `read`, over 2M calls in a loop. */
function perRead(read: () => number): number {
  const n = 2_000_000;
  let sink = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) sink += read();
  const ns = Number(process.hrtime.bigint() - t0) / n;
  if (sink === -1) console.log(sink); // the reads are used
  return ns;
}

console.log(
  `one read: performance.now() ${perRead(() => performance.now()).toFixed(1)} ns, Date.now() ${perRead(Date.now).toFixed(1)} ns`,
);
for (let round = 1; round <= 2; round++) {
  const exact = await run(plain);
  const turn = await run(() => systemClock.now());
  console.log(
    `round ${round}, ${reads} reads a turn: performance.now() each ${exact.toFixed(3)} µs CPU a turn, systemClock ${turn.toFixed(3)} µs (${(turn - exact >= 0 ? "+" : "") + (turn - exact).toFixed(3)})`,
  );
}
