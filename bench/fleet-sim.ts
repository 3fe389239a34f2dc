/**
 * Fleet simulation report:
 * `node --import tsx bench/fleet-sim.ts [--seed N] [--quick] [--json] [--widths]`.
 *
 * Four pods whose true capacities (29, 30, 31, 32: seed 000's measurements) are hidden from the
 * Governor, each configured at ceiling 64, one lane, offered 2× the fleet's capacity. Measures
 * after a 60 s warm-up over 600 s of simulated time (120 s with --quick), then a dead fleet.
 * Targets: utilization ≥ 90 %, refusals ≤ 10 per 1,000 dispatches; in the dead fleet, upstream
 * attempts ≤ 1.1 × calls; every width settled within its convergence band before the window
 * opens. `--widths` also prints each pod's width range per second over the first minute.
 * Exits 0 either way (a report, not a gate); the verdicts are printed.
 */
import { convergenceBand, runScenario, type SimResult, settledAtMs } from "./fleet-sim-lib.js";
import {
  deadFleetRecoveryScenario,
  deadFleetScenario,
  deadFleetWholeRunScenario,
  standardScenarios,
} from "./fleet-sim-scenarios.js";

const args = process.argv.slice(2);
const seedArg = args.indexOf("--seed");
const seed = seedArg >= 0 ? Number(args[seedArg + 1]) : 1;
const quick = args.includes("--quick");
const json = args.includes("--json");
const showWidths = args.includes("--widths");

const UTILIZATION_TARGET = 0.9;
const REFUSALS_TARGET = 10;
const AMPLIFICATION_TARGET = 1.1;

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const fix = (x: number, d = 1) => x.toFixed(d);

function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ");
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

const started = performance.now();
const scenarios = standardScenarios(seed, quick ? 120_000 : 600_000);
const warmupMs = scenarios[0]!.warmupMs;
const steady: SimResult[] = [];
for (const scenario of scenarios) steady.push(await runScenario(scenario));
const dead = await runScenario(deadFleetScenario(seed));
const after = await runScenario(deadFleetRecoveryScenario(seed));
const whole = await runScenario(deadFleetWholeRunScenario(seed));
const elapsedS = (performance.now() - started) / 1000;

if (json) {
  console.log(
    JSON.stringify({ seed, steady, dead, after, whole }, (k, v) => (k === "series" ? undefined : v), 2),
  );
  process.exit(0);
}

console.log(
  `sluice fleet simulation — seed ${seed}, pods 29/30/31/32 (ceiling 64), offered 2x, service lognormal mean 1 s σ 0.5`,
);
console.log(
  `warm-up ${warmupMs / 1000} s, measured ${steady[0]!.windowMs / 1000} s; ${fix(elapsedS)} s wall\n`,
);
console.log(
  table(
    [
      "scenario",
      "util",
      "refusals/1k",
      "attempts/call",
      "goodput/s",
      "p50 s",
      "trips",
      "mean widths",
      "final widths",
    ],
    steady.map((r) => [
      r.scenario,
      pct(r.utilization),
      fix(r.refusalsPer1000),
      fix(r.attemptsPerCall, 3),
      `${fix(r.goodputPerS)}/${fix(r.capacityPerS, 0)}`,
      fix(r.latencyP50Ms / 1000),
      String(r.trips),
      r.pods.map((p) => fix(p.meanWidth)).join(" "),
      r.pods.map((p) => p.finalWidth).join(" "),
    ]),
  ),
);

const main = steady[0]!;
const settledS = main.pods.map((p) => settledAtMs(p, main.bucketMs) / 1000);
console.log("\nper pod, first scenario (capacity → width range over the window):");
console.log(
  table(
    ["pod", "capacity", "util", "width min–max", "band", "settled", "mean", "cuts", "refusals", "dispatches"],
    main.pods.map((p, i) => [
      p.id,
      String(p.capacity),
      pct(p.utilization),
      `${p.minWidth}–${p.maxWidth}`,
      convergenceBand(p.capacity).join("–"),
      `${settledS[i]} s`,
      fix(p.meanWidth),
      String(p.cuts),
      String(p.refusals),
      String(p.dispatches),
    ]),
  ),
);

if (showWidths) {
  console.log("\nwidths over the first minute, first scenario (each second's min–max; fleet utilization):");
  const rows: string[][] = [];
  for (let k = 0; k < Math.min(60, main.series.length); k++)
    rows.push([
      `${(k * main.bucketMs) / 1000}`,
      pct(main.series[k]!),
      ...main.pods.map((p) => {
        const [lo, hi] = p.widthSeries[k]!;
        return lo === hi ? String(lo) : `${lo}–${hi}`;
      }),
    ]);
  console.log(table(["s", "util", ...main.pods.map((p) => `capacity ${p.capacity}`)], rows));
}

// Recovery after the dead fleet: first 1 s bucket after 90 s where utilization is back to 90 %
// of the steady scenario's.
const back = after.series.findIndex((u, k) => k * after.bucketMs >= 90_000 && u >= 0.9 * main.utilization);
console.log("\ndead fleet (every pod refuses everything, 60–90 s):");
const deadRow = (label: string, r: SimResult) => [
  label,
  String(r.calls),
  String(r.dispatches),
  fix(r.attemptsPerCall, 3),
  fix((1000 * r.dispatches) / r.windowMs, 0),
  String(r.failed),
  String(r.trips),
  r.pods.map((p) => p.dispatches).join(" "),
  r.pods.map((p) => p.finalBreaker).join(" "),
];
console.log(
  table(
    [
      "window",
      "calls",
      "attempts",
      "attempts/call",
      "attempts/s",
      "failed calls",
      "trips",
      "attempts per pod",
      "breakers at end",
    ],
    [deadRow("outage 60–90 s", dead), deadRow("after 90–150 s", after), deadRow("whole run 0–150 s", whole)],
  ),
);
console.log(
  `recovery: utilization back to ${pct(0.9 * main.utilization)} at ${back < 0 ? "never" : `${(back * after.bucketMs) / 1000 - 90} s after the outage`}; ` +
    `utilization 90–150 s ${pct(after.utilization)}, final widths ${after.pods.map((p) => p.finalWidth).join(" ")}`,
);

const verdict = (ok: boolean) => (ok ? "met" : "MISSED");
console.log("\ntargets (first scenario):");
console.log(
  `  utilization ≥ 90 %             ${pct(main.utilization).padStart(8)}  ${verdict(main.utilization >= UTILIZATION_TARGET)}`,
);
console.log(
  `  refusals ≤ 10 per 1,000        ${fix(main.refusalsPer1000).padStart(8)}  ${verdict(main.refusalsPer1000 <= REFUSALS_TARGET)}`,
);
console.log(
  `  widths settled by the window   ${`${Math.max(...settledS)} s`.padStart(8)}  ${verdict(Math.max(...settledS) * 1000 <= warmupMs)}`,
);
console.log(
  `  dead fleet attempts ≤ 1.1×     ${fix(dead.attemptsPerCall, 3).padStart(8)}  ${verdict(dead.attemptsPerCall <= AMPLIFICATION_TARGET)}`,
);
