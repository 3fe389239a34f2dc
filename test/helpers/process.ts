/**
 * Helpers for tests that run sluice as a user does — a real process — and for the other programs
 * they start (HAProxy, redis-server): the `sluice` command run to its exit, a `sluice serve`
 * started and its URL read from its banner, a free loopback port, and a binary on the PATH.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { createServer } from "node:net";
import { promisify } from "node:util";

/** The CLI's entry point, run through tsx so a test needs no build. */
export const SLUICE_MAIN = new URL("../../src/cli/main.ts", import.meta.url).pathname;

const run = promisify(execFile);

/** Runs `sluice …args` to its exit; resolves with its exit code and output, whatever the code. */
export async function sluice(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", SLUICE_MAIN, ...args]);
    return { code: 0, stdout, stderr };
  } catch (e) {
    const { code, stdout, stderr } = e as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

/** A `sluice serve` process and where it listens. */
export interface ServeProcess {
  child: ChildProcess;
  /** `http://127.0.0.1:PORT`, read from the banner's "listening on" line. */
  url: string;
  /** What it wrote to stderr so far (the banner, warnings, errors); grows as it runs. */
  stderr(): string;
}

/**
 * Starts `sluice serve --config FILE …args` and resolves once its banner names the address; rejects
 * with what it printed if it exits first.
 */
export function startServe(file: string, ...args: string[]): Promise<ServeProcess> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", SLUICE_MAIN, "serve", "--config", file, ...args],
    {
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  return new Promise((resolve, reject) => {
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(stderr);
      if (m) resolve({ child, url: m[1]!, stderr: () => stderr });
    });
    child.once("exit", (code) =>
      reject(new Error(`sluice serve exited (${code}) before listening:\n${stderr}`)),
    );
  });
}

/** The path of `cmd` on the PATH, or undefined. */
export function which(cmd: string): string | undefined {
  try {
    return execFileSync("sh", ["-c", `command -v ${cmd}`], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** A loopback port free at the time of asking (for a program that must be told its port). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}
