/**
 * The receipt (issue 11, DESIGN §6): one JSON file per `sluice load` run, written even when the
 * run failed. The through-sluice run's numbers are at the top level and the straight-to-the-pods
 * run's under `direct`; `config_hash` covers every setting the runs depended on, and `hardware`
 * what they ran on, so that a later run can be compared without mistaking a changed setting or
 * a slower machine for a regression.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { cpus, platform, totalmem } from "node:os";
import type { RunStats } from "./stats.js";
import type { Check } from "./types.js";

/** The machine a run ran on. */
export interface Hardware {
  cpu_model: string;
  cores: number;
  memory_bytes: number;
  node: string;
  platform: string;
  arch: string;
}

/** What produced the numbers, beyond settings and hardware: a change here is what a regression is about. */
export interface Software {
  sluice: string;
  /** `git rev-parse HEAD` where the run started, when it is a git checkout. */
  commit: string | null;
}

/** What a receipt holds besides the runs. */
export interface ReceiptHead {
  receipt_version: 1;
  profile: string;
  seed: string;
  created_at: string;
  /** The command line, to run it again. */
  command: string;
  /** Every check met, no run failed, nothing leaked, every byte as sent. */
  ok: boolean;
  error?: string;
  /** SHA-256 of `settings` as canonical JSON. */
  config_hash: string;
  settings: Record<string, unknown>;
  hardware: Hardware;
  software: Software;
  /** Real ms per seed ms. */
  time_scale: number;
  checks: Check[];
}

/**
 * A receipt: the head, the through-sluice run's fields (absent with `--only direct`), `direct`,
 * and for a profile with a `honouring` run (`ocr-flood`) `retry_after_honoured`: through sluice
 * again, the clients retrying sluice's refusals after their `Retry-After`.
 */
export type Receipt = ReceiptHead &
  Partial<RunStats> & {
    direct: RunStats | null;
    retry_after_honoured?: RunStats | null;
    /** A profile's `alone` run (`noisy-neighbour`: tenant B through sluice with A absent). */
    alone?: RunStats | null;
    baseline?: unknown;
  };

/** The machine this process runs on. */
export function hardware(): Hardware {
  const cpu = cpus();
  return {
    cpu_model: cpu[0]?.model.trim() ?? "unknown",
    cores: cpu.length,
    memory_bytes: totalmem(),
    node: process.version,
    platform: platform(),
    arch: process.arch,
  };
}

/** sluice's version and, in a git checkout, the commit. */
export function software(): Software {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  let commit: string | null = null;
  try {
    commit = execFileSync("git", ["rev-parse", "HEAD"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    commit = null;
  }
  return { sluice: pkg.version, commit };
}

/** JSON with every object's keys sorted: the same settings always hash the same. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)),
    );
  });
}

/** `sha256:<hex>` of the canonical JSON of `settings`. */
export function configHash(settings: unknown): string {
  return `sha256:${createHash("sha256").update(canonicalJson(settings)).digest("hex")}`;
}

/** Checks every profile gets: nothing leaked, every byte as the sim sent it, no run failed. */
export function integrityChecks(
  sluice: RunStats | null,
  direct: RunStats | null,
  honouring: RunStats | null = null,
  alone: RunStats | null = null,
): Check[] {
  const checks: Check[] = [];
  for (const [run, of] of [
    [sluice, ""],
    [honouring, " (Retry-After honoured)"],
    [alone, " (some groups alone)"],
  ] as const) {
    if (run === null) continue;
    checks.push({
      name: `no reservation leaked: telemetry back to zero after the drain${of}`,
      target: "0",
      value: run.leaked_reservations === null ? "not read" : `${run.leaked_reservations}`,
      met: run.leaked_reservations === 0,
    });
  }
  const runs = [sluice, direct, honouring, alone].filter((r): r is RunStats => r !== null);
  const runName = (r: RunStats) =>
    r === honouring ? "sluice, Retry-After honoured" : r === alone ? "sluice, some groups alone" : r.target;
  checks.push({
    name: "every answer's bytes exactly as the sim sent them",
    target: "0 mismatches",
    value: runs.map((r) => `${r.bytes_mismatches} ${runName(r)}`).join(", "),
    met: runs.every((r) => r.bytes_mismatches === 0),
  });
  for (const r of runs) {
    if (r.error !== undefined) {
      const which =
        r === honouring
          ? "sluice (Retry-After honoured)"
          : r === alone
            ? "sluice (some groups alone)"
            : r.target;
      checks.push({ name: `the ${which} run completed`, target: "no error", value: r.error, met: false });
    }
  }
  return checks;
}

/** Builds the receipt of a finished (or failed) run. */
export function buildReceipt(parts: {
  profile: string;
  seed: string;
  command: string;
  settings: Record<string, unknown>;
  scale: number;
  sluice: RunStats | null;
  direct: RunStats | null;
  /** The `honouring` run, for a profile that has one. */
  honouring?: RunStats | null;
  /** The `alone` run, for a profile that has one. */
  alone?: RunStats | null;
  checks: Check[];
  error?: string;
}): Receipt {
  const head: ReceiptHead = {
    receipt_version: 1,
    profile: parts.profile,
    seed: parts.seed,
    created_at: new Date().toISOString(),
    command: parts.command,
    ok: parts.error === undefined && parts.checks.every((c) => c.met),
    ...(parts.error !== undefined ? { error: parts.error } : {}),
    config_hash: configHash(parts.settings),
    settings: parts.settings,
    hardware: hardware(),
    software: software(),
    time_scale: parts.scale,
    checks: parts.checks,
  };
  return {
    ...head,
    ...(parts.sluice ?? {}),
    direct: parts.direct,
    ...(parts.honouring === undefined ? {} : { retry_after_honoured: parts.honouring }),
    ...(parts.alone === undefined ? {} : { alone: parts.alone }),
  };
}

/** The through-sluice run of a receipt, or null when it has none. */
export function sluiceRun(r: Receipt): RunStats | null {
  return r.target === "sluice" ? (r as unknown as RunStats) : null;
}
