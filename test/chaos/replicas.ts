/**
 * The gateways under test: real `sluice serve` processes (node + tsx on src/, so the tree's
 * current code runs), each on a fixed port of its own (kept across restarts, so the traffic
 * finds it again) with its own config file. The harness kills, pauses, resumes, reloads and
 * restarts them, reads their memory from /proc and their snapshot from the telemetry route.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { request } from "undici";
import type { Snapshot } from "../../src/core/snapshot.js";

const MAIN = new URL("../../src/cli/main.ts", import.meta.url).pathname;
/** How much of a replica's stderr is kept, for the report of a failed run. */
const LOG_TAIL = 16_384;

export type ReplicaState = "up" | "paused" | "dead";

export class Replica {
  #child: ChildProcess | null = null;
  #log = "";
  state: ReplicaState = "dead";
  /** Replica ids this slot had (one per process), as its snapshots name them. */
  readonly ids = new Set<string>();
  /** Processes started in this slot (1 + restarts). */
  starts = 0;
  /** Processes of this slot that exited without the harness killing them, with their last output. */
  readonly crashes: string[] = [];
  /** The process `kill()` is ending (its exit is not a crash). */
  #killing: ChildProcess | null = null;

  constructor(
    readonly index: number,
    readonly port: number,
    readonly configPath: string,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** The last lines it wrote to stderr. */
  get log(): string {
    return this.#log;
  }

  /** Starts the process and resolves once it listens (rejects if it exits first). */
  async start(timeoutMs = 60_000): Promise<void> {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", MAIN, "serve", "--config", this.configPath, "--port", String(this.port)],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    this.#child = child;
    this.starts++;
    let own = ""; // this process's output: the log may still hold the last one's "listening" line
    this.#log += `--- start ${this.starts}\n`;
    child.stderr!.on("data", (chunk: Buffer) => {
      own += chunk.toString();
      this.#log = (this.#log + chunk.toString()).slice(-LOG_TAIL);
    });
    child.once("exit", (code, signal) => {
      if (this.#child === child) {
        this.#child = null;
        this.state = "dead";
      }
      if (child !== this.#killing)
        this.crashes.push(
          `replica ${this.index} (start ${this.starts}) exited by itself (${code ?? signal}):\n${own.slice(-4000)}`,
        );
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`replica ${this.index} not listening after ${timeoutMs} ms:\n${this.#log}`)),
        timeoutMs,
      );
      const onData = () => {
        if (!own.includes(`listening on http://127.0.0.1:${this.port}`)) return;
        clearTimeout(timer);
        child.stderr!.off("data", onData);
        resolve();
      };
      child.stderr!.on("data", onData);
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`replica ${this.index} exited (${code ?? signal}) before listening:\n${this.#log}`));
      });
    });
    this.state = "up";
  }

  /** SIGKILL, and resolves once the process is gone. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    this.#killing = child;
    child.kill("SIGKILL");
    await gone;
  }

  pause(): void {
    this.#child?.kill("SIGSTOP");
    if (this.#child) this.state = "paused";
  }

  resume(): void {
    this.#child?.kill("SIGCONT");
    if (this.#child) this.state = "up";
  }

  reload(): void {
    this.#child?.kill("SIGHUP");
  }

  /** Resident memory in bytes (VmRSS), or undefined when the process is not there. */
  rssBytes(): number | undefined {
    const pid = this.pid;
    if (pid === undefined) return undefined;
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      return m ? Number(m[1]) * 1024 : undefined;
    } catch {
      return undefined;
    }
  }

  /** Its snapshot (`/api/telemetry/lanes`), or undefined when it does not answer in time. */
  async snapshot(timeoutMs = 3000): Promise<Snapshot | undefined> {
    if (this.state !== "up") return undefined;
    try {
      const res = await request(`${this.url}/api/telemetry/lanes`, {
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const snapshot = (await res.body.json()) as Snapshot;
      this.ids.add(snapshot.replica);
      return snapshot;
    } catch {
      return undefined;
    }
  }
}
