/**
 * One wrk run of the wrk-driven retry storm (wrk-storm.ts): `wrk -t2 -cN -dS --latency` with
 * wrk-storm.lua, which counts each status and keeps the 200s' latency apart.
 * A wrk connection sends its next request the moment an answer arrives, refused or not: the
 * retry storm as the tool most users reach for sends it.
 */
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const WRK_SCRIPT = join(here, "wrk-storm.lua");

export interface WrkStormResult {
  seconds: number;
  /** Every answer wrk completed. */
  requests: number;
  /** Answers by status. */
  statuses: Record<string, number>;
  /** 200s whose send time came back (every 200 of the bench's pods). */
  okTimed: number;
  okP50Ms: number;
  okP99Ms: number;
  okMaxMs: number;
  /** wrk's own: every answer. */
  allP50Ms: number;
  allP99Ms: number;
  /** Per second of the run: [second, 200s, 200s slower than 1 s, other answers]. */
  perSecond: [number, number, number, number][];
  /** Socket errors and wrk's timeouts. */
  errors: number;
  /** wrk's whole output, for a report that failed to parse. */
  text: string;
}

export interface WrkStormRun {
  bin: string;
  url: string;
  body: string;
  connections: number;
  seconds: number;
  threads?: number;
  /** Each connection waits this long before each request (WRK_DELAY_MS): a rate, not a storm. */
  delayMs?: number;
}

/** Runs wrk; rejects when its output has no result line. */
export function runStormWrk(run: WrkStormRun): Promise<WrkStormResult> {
  const argv = [
    `-t${run.threads ?? 2}`,
    `-c${run.connections}`,
    `-d${Math.max(1, Math.round(run.seconds))}s`,
    "--latency",
    // Past the default 2 s, so a held or queued answer's latency is kept, not counted a timeout.
    "--timeout",
    "10s",
    "-s",
    WRK_SCRIPT,
    run.url,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(run.bin, argv, {
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        WRK_BODY: run.body,
        ...(run.delayMs === undefined ? {} : { WRK_DELAY_MS: String(run.delayMs) }),
      },
    });
    let out = "";
    child.stdout.on("data", (b: Buffer) => {
      out += b.toString();
    });
    child.stderr.on("data", (b: Buffer) => {
      out += b.toString();
    });
    child.once("error", reject);
    child.once("exit", () => {
      const line = /WRKSTORM (.*)/.exec(out)?.[1];
      if (line === undefined) return reject(new Error(`wrk gave no result:\n${out}`));
      const f = new Map(line.split(" ").map((kv) => kv.split("=") as [string, string]));
      const n = (k: string) => Number(f.get(k));
      const ms = (k: string) => (n(k) < 0 ? Number.NaN : n(k) / 1000);
      const statuses: Record<string, number> = {};
      for (const part of (f.get("statuses") ?? "").split(",")) {
        const [s, c] = part.split(":");
        if (s && c) statuses[s] = Number(c);
      }
      resolve({
        seconds: n("duration_us") / 1e6,
        requests: n("requests"),
        statuses,
        okTimed: n("ok_timed"),
        okP50Ms: ms("ok_p50_us"),
        okP99Ms: ms("ok_p99_us"),
        okMaxMs: ms("ok_max_us"),
        allP50Ms: ms("all_p50_us"),
        allP99Ms: ms("all_p99_us"),
        perSecond: (f.get("per_sec") ?? "")
          .split(",")
          .filter((x) => x !== "")
          .map((x) => x.split(":").map(Number) as [number, number, number, number]),
        errors: n("connect") + n("read") + n("write") + n("timeout"),
        text: out,
      });
    });
  });
}
