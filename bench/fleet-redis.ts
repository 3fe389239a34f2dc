/**
 * `npm run bench:fleet` (issue 9, "Speed"): what a fleet grant + release through Redis costs,
 * side by side with rate-limiter-flexible's Redis limiter, bottleneck's Redis clustering and a
 * raw EVALSHA floor, at 1 and 64 concurrent callers; sluice's grant latency at a fixed 5,000
 * grants/s; commands per grant counted with MONITOR; and `sluice serve --workers 1 | 2` with a
 * Redis store in front of a fast simulated pod. A benchmark, not a test: it prints markdown
 * tables and the verdicts against the issue's targets, and exits 0 whether they are met or not
 * (2 when no Redis answers). See docs/bench-fleet.md for what each column means.
 *
 * Loopback only: the Redis at REDIS_URL (default redis://127.0.0.1:6379) under one unique key
 * prefix, deleted at the end (also after a failure); the gateway part's pod and gateway on
 * 127.0.0.1. Bounded: about 3½ minutes (`--quick`: about 2).
 *
 * Flags: --quick (short windows, one round), --rounds=N (closed-loop rounds; the median is
 * reported), --only=library,workers, --callers=1,64, --cpu-prof=DIR (a V8 CPU profile of each
 * gateway process of the workers part, for bench/gateway/profile.ts).
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { CONTENDERS, type Contender, cleanUp, client } from "./fleet-redis-contenders.js";
import { countCommands } from "./fleet-redis-count.js";
import { closedLoop, paced, type RunResult } from "./fleet-redis-measure.js";
import {
  type LibraryRow,
  libraryTable,
  pacedTable,
  ratioTable,
  verdicts,
  verdictTable,
  workersTable,
} from "./fleet-redis-report.js";
import { benchWorkers, buildCli, type WorkersRow } from "./fleet-redis-workers.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const argv = process.argv.slice(2);
const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const QUICK = argv.includes("--quick");
const ROUNDS = Number(flag("rounds") ?? (QUICK ? 1 : 3));
const ONLY = (flag("only") ?? "library,workers").split(",");
const CALLERS = (flag("callers") ?? "1,64").split(",").map(Number);
/** `--cpu-prof=DIR`: each gateway process of the workers part writes a CPU profile there. */
const CPU_PROF = flag("cpu-prof");
const WARM_MS = QUICK ? 200 : 300;
const WINDOW_MS = QUICK ? 700 : 1500;
const PACED_RATE = 5000;
const PACED_MS = QUICK ? 1000 : 3000;
const COUNT_GRANTS = QUICK ? 200 : 500;
/** Every contender's limit: far above the callers, so nobody waits for room. */
const LIMIT = 1000;
/** The one we judge against the targets, and the peer it must beat at 64 callers. */
const SUBJECT = "sluice Governor";
const PEER = "rlf consume+reward";
/** Paced at 5,000 grants/s: sluice, and the floor and rate-limiter-flexible for comparison. */
const PACED = new Set([SUBJECT, "floor (EVALSHA pair)", PEER]);

const log = (line: string) => process.stderr.write(`${line}\n`);
const marker = `sluice-bench-fleet-${randomUUID().slice(0, 8)}`;

/** The commit measured, and whether src/ had uncommitted changes (the bench runs what is there). */
function gitState(): string {
  try {
    const git = (...args: string[]) => execFileSync("git", args, { encoding: "utf8" }).trim();
    const dirty = git("status", "--porcelain", "src") !== "";
    return `${git("rev-parse", "--short", "HEAD")}${dirty ? " + uncommitted changes in src/" : ""}`;
  } catch {
    return "unknown commit";
  }
}

/** The server's version, or undefined when no Redis answers. */
async function redisVersion(): Promise<string | undefined> {
  const c = client(REDIS_URL);
  try {
    const info = await c.info("server");
    return /redis_version:(\S+)/.exec(info)?.[1] ?? "?";
  } catch {
    return undefined;
  } finally {
    c.disconnect();
  }
}

/** The median of each field over rounds (each field on its own: a round's p99 is not tied to its ops/s). */
function median(results: readonly RunResult[]): RunResult {
  const m = (f: (r: RunResult) => number) => {
    const v = results.map(f).sort((a, b) => a - b);
    return v[Math.floor((v.length - 1) / 2)]!;
  };
  return {
    opsPerS: m((r) => r.opsPerS),
    p50Us: m((r) => r.p50Us),
    p99Us: m((r) => r.p99Us),
    cpuUsPerOp: m((r) => r.cpuUsPerOp),
    failed: results.reduce((a, r) => a + r.failed, 0),
  };
}

async function library(): Promise<LibraryRow[]> {
  const made: Contender[] = [];
  try {
    for (const spec of CONTENDERS) made.push(await spec.make(REDIS_URL, marker, LIMIT));
    const runs = new Map<string, RunResult[]>();
    // Rounds interleave the contenders, so a burst of load from elsewhere on the machine spreads
    // over all of them instead of landing on one.
    for (let round = 1; round <= ROUNDS; round++) {
      for (const c of made) {
        for (const callers of CALLERS) {
          const r = await closedLoop(c, callers, WARM_MS, WINDOW_MS);
          const key = `${c.name}\n${callers}`;
          runs.set(key, [...(runs.get(key) ?? []), r]);
          log(
            `  round ${round} ${c.name}, ${callers} callers: ${Math.round(r.opsPerS)} ops/s, p99 ${r.p99Us.toFixed(0)} µs${r.failed > 0 ? `, ${r.failed} FAILED` : ""}`,
          );
        }
      }
    }
    const rows: LibraryRow[] = made.map((c) => ({
      name: c.name,
      releaseAwaited: c.releaseAwaited,
      byCallers: new Map(CALLERS.map((n) => [n, median(runs.get(`${c.name}\n${n}`)!)])),
    }));
    for (const [i, c] of made.entries()) {
      if (!PACED.has(c.name)) continue;
      rows[i]!.paced = await paced(c, PACED_RATE, 500, PACED_MS);
      log(`  paced ${c.name}: p99 ${rows[i]!.paced!.p99Us.toFixed(0)} µs`);
    }
    for (const [i, c] of made.entries()) {
      try {
        rows[i]!.count = await countCommands(REDIS_URL, marker, c, COUNT_GRANTS);
        log(`  counted ${c.name}: ${JSON.stringify(rows[i]!.count!.byName)}`);
      } catch (error) {
        log(`  counting ${c.name} failed: ${error instanceof Error ? error.message : JSON.stringify(error)}`);
      }
    }
    return rows;
  } finally {
    for (const c of made) await c.close().catch(() => {});
  }
}

async function main(): Promise<number> {
  const version = await redisVersion();
  if (version === undefined) {
    log(`bench:fleet: no Redis answers at ${REDIS_URL}; start redis-server or set REDIS_URL`);
    return 2;
  }
  const started = new Date();
  const load0 = loadavg()[0]!;
  log(`bench:fleet: ${REDIS_URL}, key prefix ${marker}, ${ROUNDS} round(s)`);
  let rows: LibraryRow[] = [];
  let workerRows: WorkersRow[] = [];
  let workersNote = "";
  try {
    if (ONLY.includes("library")) rows = await library();
    if (ONLY.includes("workers")) {
      log("  building the CLI into .bench/fleet-dist …");
      if (!buildCli()) workersNote = "not run: tsc produced no CLI";
      else
        workerRows = await benchWorkers(
          {
            redisUrl: REDIS_URL,
            prefix: `${marker}-workers`,
            connections: 32,
            warmupMs: QUICK ? 500 : 1000,
            durationMs: QUICK ? 2000 : 5000,
            ...(CPU_PROF === undefined ? {} : { cpuProfDir: CPU_PROF }),
          },
          log,
        );
    }
  } finally {
    log(`  removed ${await cleanUp(REDIS_URL, marker)} keys under ${marker}`);
  }
  const out: string[] = [];
  out.push(
    `## bench:fleet — ${started.toISOString().slice(0, 16).replace("T", " ")} UTC, load average ${load0.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}`,
    "",
    `\`npm run bench:fleet${argv.length > 0 ? ` -- ${argv.join(" ")}` : ""}\` at ${gitState()}; Node ${process.version}; Redis ${version} at ${REDIS_URL}; limit ${LIMIT} for every contender; closed loop: median of ${ROUNDS} round(s) of ${WINDOW_MS} ms after ${WARM_MS} ms warm-up.`,
  );
  if (rows.length > 0) {
    out.push(
      "",
      "### Grant + release, closed loop",
      "",
      libraryTable(rows, CALLERS),
      "",
      ratioTable(rows, CALLERS, SUBJECT),
      "",
      `### Paced at ${PACED_RATE.toLocaleString("en-US")} grants/s (${PACED_MS} ms window)`,
      "",
      pacedTable(rows),
      "",
      "### Targets (issue 9)",
      "",
      verdictTable(verdicts(rows, SUBJECT, PEER)),
    );
  }
  if (ONLY.includes("workers")) {
    out.push("", "### `sluice serve --workers N`, Redis store, one zero-service-time pod", "");
    out.push(workersNote === "" ? workersTable(workerRows) : workersNote);
  }
  process.stdout.write(`${out.join("\n")}\n`);
  return 0;
}

process.exitCode = await main();
