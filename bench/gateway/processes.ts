/**
 * The gateway benchmark's child processes, shared by main.ts and the sections that start their
 * own (wrk-storm.ts): when the built sluice CLI is listening, stopping a child, and a process's
 * CPU time from /proc.
 */
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";

/** The URL `sluice serve` prints on stderr ("sluice gateway listening on URL"). */
export function cliReady(child: ChildProcess): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let text = "";
    const t = setTimeout(() => reject(new Error(`sluice serve did not start in 20 s:\n${text}`)), 20_000);
    child.stderr?.on("data", (b: Buffer) => {
      text += b.toString();
      const m = /listening on (http:\/\/\S+)/.exec(text);
      if (m !== null) {
        clearTimeout(t);
        resolve([m[1]!]);
      }
    });
    child.once("exit", (code) => reject(new Error(`sluice serve exited (${code}):\n${text}`)));
  });
}

/** SIGTERM, then SIGKILL after 5 s; resolves when `child` has exited. */
export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const t = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.once("exit", () => {
      clearTimeout(t);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** CPU seconds (user + system) a process has used, from /proc; NaN where there is no /proc. */
export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100; // USER_HZ is 100 on Linux
  } catch {
    return Number.NaN;
  }
}
