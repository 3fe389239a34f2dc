/**
 * `sluice load PROFILE` (also `npm run load -- PROFILE`): flags → src/load/session.ts, then the
 * side-by-side report. Thin: parsing, the not-built refusal and printing only.
 *
 * Exit codes: 0 every check met (and no regression against `--baseline`); 1 a check failed, the
 * run failed or a regression; 2 a usage error or a profile not built yet.
 */
import type { ParseArgsConfig } from "node:util";
import { stringify } from "yaml";
import { podUrls } from "../load/pods.js";
import { findProfile, isNotBuilt, LOAD_PROFILES } from "../load/profiles/index.js";
import { createProgress, type ProgressStream } from "../load/progress.js";
import { renderReport } from "../load/report.js";
import { BaselineError, runSession } from "../load/session.js";
import { assertScalable, scaledSeconds, UnscalableProfileError } from "../load/time-scale.js";
import type { LoadProfile } from "../load/types.js";
import { parseCliArgs } from "./args.js";

/** Pods' first port with `--gateway` or `--print-config` when `--sim-base-port` is not given. */
export const DEFAULT_SIM_BASE_PORT = 9300;

/** One line per profile: its name, seed, what it replays and its default scale. */
function profileLines(): string[] {
  return LOAD_PROFILES.map(
    (p) =>
      `  ${p.name.padEnd(16)} seed ${p.seed}  ${isNotBuilt(p) ? "not built yet: " : ""}${p.title}` +
      (isNotBuilt(p) ? "" : ` (default --scale ${p.defaultScale})`),
  );
}

const USAGE = `usage: sluice load PROFILE [options]
       sluice load --list
       npm run load -- PROFILE [options]

Replays a seed's incident twice, through sluice and straight to simulated pods, prints both
side by side and writes a receipt.

profiles:
${profileLines().join("\n")}

options:
  --scale F          time scale, real seconds per second of the incident: 0.1 runs a 19 s page in
                     1.9 s (default: the profile's); smaller runs faster and needs more CPU
  --receipt FILE     where the receipt goes (default receipts/PROFILE-TIME.json)
  --baseline FILE    compare with an earlier receipt: says first whether the settings or the
                     hardware changed, and calls a worse number a regression only if neither did
  --gateway URL      drive a gateway already running instead of starting one; it must serve the
                     pods this tool starts at --sim-base-port (get its config from --print-config)
  --sim-base-port P  first port of the simulated pods (default: free ports, or ${DEFAULT_SIM_BASE_PORT} when
                     a gateway is given or the config printed)
  --print-config     print the gateway config for the profile's pods and exit
  --only SIDE        run one side only: sluice | direct
  --json             print the receipt instead of the table
  --list             list the profiles and exit
  -h, --help         show this help
`;

/** Every flag `sluice load` accepts (node:util parseArgs options); the help has a line for each. */
export const OPTIONS = {
  scale: { type: "string" },
  receipt: { type: "string" },
  baseline: { type: "string" },
  gateway: { type: "string" },
  "sim-base-port": { type: "string" },
  "print-config": { type: "boolean" },
  only: { type: "string" },
  json: { type: "boolean" },
  list: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

/** Where `main` writes; tests pass their own. */
export interface LoadCliIo {
  out?: (text: string) => void;
  err?: (text: string) => void;
  /** The progress display's stream. **Default:** `process.stderr`. */
  progress?: ProgressStream;
}

/** A flag value `sluice load` cannot use. */
export class LoadUsageError extends Error {
  override readonly name = "LoadUsageError";
  constructor(
    readonly flag: string,
    message: string,
  ) {
    super(message);
  }
}

/** Runs `sluice load` with the arguments after `load`; resolves to the exit code. */
export async function main(argv: string[], io: LoadCliIo = {}): Promise<number> {
  const out = io.out ?? ((t: string) => process.stdout.write(t));
  const err = io.err ?? ((t: string) => process.stderr.write(t));
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags(argv);
  } catch (e) {
    // A flag the parser does not know gets the usage; a value it cannot use, just the reason.
    err(`sluice load: ${(e as Error).message}\n${e instanceof LoadUsageError ? "" : `\n${USAGE}`}`);
    return 2;
  }
  if (parsed === "help") {
    out(USAGE);
    return 0;
  }
  if (parsed === "list") {
    out(`${profileLines().join("\n")}\n`);
    return 0;
  }
  const { profile, scale, values, simBasePort } = parsed;
  if (values["print-config"] === true) {
    const config = profile.config(
      podUrls(profile, simBasePort ?? DEFAULT_SIM_BASE_PORT),
      scaledSeconds(scale),
    );
    out(`# sluice load ${profile.name} --scale ${scale}: the gateway for its pods\n${stringify(config)}`);
    return 0;
  }
  try {
    await profile.preflight?.();
  } catch (e) {
    // What the profile needs is missing (autoscale: Redis): a setup error, not a failed run.
    err(`sluice load: profile ${profile.name} cannot run here: ${(e as Error).message}\n`);
    return 2;
  }
  try {
    const result = await runSession({
      profile,
      scale,
      command: ["sluice", "load", ...argv].join(" "),
      ...(typeof values.receipt === "string" ? { receiptPath: values.receipt } : {}),
      ...(typeof values.baseline === "string" ? { baselinePath: values.baseline } : {}),
      ...(typeof values.gateway === "string" ? { gatewayUrl: values.gateway.replace(/\/+$/, "") } : {}),
      ...(simBasePort !== undefined ? { simBasePort } : {}),
      ...(values.only === "sluice" || values.only === "direct" ? { only: values.only } : {}),
      progress: createProgress(io.progress ?? process.stderr, profile.name),
    });
    if (values.json === true) out(`${JSON.stringify(result.receipt, null, 2)}\n`);
    else out(`${renderReport(profile, result.receipt, result.receiptPath).join("\n")}\n`);
    return result.exitCode;
  } catch (e) {
    if (e instanceof BaselineError) {
      err(`sluice load: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

function parseFlags(argv: string[]):
  | "help"
  | "list"
  | {
      profile: LoadProfile;
      scale: number;
      simBasePort: number | undefined;
      values: Record<string, unknown>;
    } {
  const { values, positionals } = parseCliArgs(argv, OPTIONS, true);
  if (values.help === true) return "help";
  if (values.list === true) return "list";
  if (positionals.length !== 1) {
    throw new LoadUsageError(
      "PROFILE",
      `expected one profile (${LOAD_PROFILES.map((p) => p.name).join(", ")}), got ${positionals.length === 0 ? "none" : positionals.join(" ")}`,
    );
  }
  const name = positionals[0]!;
  const found = findProfile(name);
  if (found === undefined) {
    throw new LoadUsageError(
      "PROFILE",
      `unknown profile "${name}"; expected one of ${LOAD_PROFILES.map((p) => p.name).join(", ")}`,
    );
  }
  if (isNotBuilt(found)) {
    throw new LoadUsageError(
      "PROFILE",
      `profile ${found.name} (seed ${found.seed}) is not built yet: ${found.reason}`,
    );
  }
  const scale = values.scale === undefined ? found.defaultScale : positive("scale", values.scale);
  try {
    assertScalable(found, scale);
  } catch (e) {
    if (e instanceof UnscalableProfileError) throw new LoadUsageError("scale", `--scale: ${e.message}`);
    throw e;
  }
  const port = values["sim-base-port"] === undefined ? undefined : portNumber(values["sim-base-port"], found);
  if (values.only !== undefined && values.only !== "sluice" && values.only !== "direct") {
    throw new LoadUsageError("only", `--only: expected sluice or direct, got "${values.only}"`);
  }
  if (values.gateway !== undefined) {
    if (!/^https?:\/\/[^\s/]+/.test(values.gateway)) {
      throw new LoadUsageError("gateway", `--gateway: expected an http(s) URL, got "${values.gateway}"`);
    }
    if (values.only === "direct")
      throw new LoadUsageError("gateway", "--gateway with --only direct drives no gateway");
  }
  // An external gateway is configured for fixed pod ports: start the pods where it expects them.
  const simBasePort = port ?? (values.gateway !== undefined ? DEFAULT_SIM_BASE_PORT : undefined);
  return { profile: found, scale, simBasePort, values };
}

function positive(flag: string, raw: string): number {
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(n) || n <= 0) {
    throw new LoadUsageError(flag, `--${flag}: expected a number > 0, got "${raw}"`);
  }
  return n;
}

function portNumber(raw: string, profile: LoadProfile): number {
  const n = Number(raw);
  const last = 65535 - profile.pods.length + 1;
  if (!Number.isInteger(n) || n < 1 || n > last) {
    throw new LoadUsageError(
      "sim-base-port",
      `--sim-base-port: expected a port from 1 to ${last}, got "${raw}"`,
    );
  }
  return n;
}
