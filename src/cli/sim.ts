/**
 * `sluice sim`: flags → one simulated pod (src/sim/server.ts) or the demo fleet (src/sim/fleet.ts).
 * Thin on purpose: parsing and printing only. Runs until SIGINT/SIGTERM, then prints what each
 * sim saw (peaks, refusals, throttles, OOM events), closes and returns 0; a bad flag returns 2
 * with a message naming it.
 */
import type { ParseArgsConfig } from "node:util";
import { isConfigError } from "../core/errors.js";
import { DEMO_BASE_PORT, DEMO_FLEET, demoFleet } from "../sim/fleet.js";
import { SIM_DEFAULTS, type SimOptions } from "../sim/options.js";
import { isSimProfileName, SIM_PROFILES } from "../sim/profiles.js";
import { startProvider } from "../sim/provider.js";
import { startSim } from "../sim/server.js";
import { parseCliArgs } from "./args.js";

const USAGE = `usage: sluice sim [--profile ${Object.keys(SIM_PROFILES).join("|")}] [--port P] [options]
       sluice sim --fleet demo [--base-port P] [--host H]

  --profile NAME           start from a named behaviour: ${Object.keys(SIM_PROFILES).join(", ")}; flags override it
  --port P                 port to listen on, 0 = any free port (default ${SIM_DEFAULTS.port})
  --host H                 address to listen on, also the demo fleet's (default ${SIM_DEFAULTS.host})
  --model NAME             model name in /v1/models and metrics (default ${SIM_DEFAULTS.model})
  --max-num-seqs N         requests running at once (default ${SIM_DEFAULTS.maxNumSeqs})
  --max-waiting N          waiting requests before --overflow applies (default unbounded)
  --overflow MODE          queue | 503 | 429 | refuse (default ${SIM_DEFAULTS.overflow})
  --listen-backlog N       pending-connection backlog passed to listen()
  --service-ms MS          mean time to first token, 0 = immediate (default ${SIM_DEFAULTS.serviceMs})
  --ms-per-output-token MS added service time per output token (default ${SIM_DEFAULTS.msPerOutputToken})
  --tokens-per-second N    streaming pace, 0 = all at once (default ${SIM_DEFAULTS.tokensPerSecond})
  --output-tokens N        tokens per answer when max_tokens allows (default ${SIM_DEFAULTS.defaultOutputTokens})
  --echo-prefix PATH       OCR-style echo route prefix (default ${SIM_DEFAULTS.echoPrefix})
  --seed N                 service-time seed (default ${SIM_DEFAULTS.seed})
  --time-scale F           multiply every duration (service, tokens, OOM downtime): 0.01 runs a 19 s page in 190 ms (default ${SIM_DEFAULTS.timeScale})
  --oom-at N               running sequences the memory holds; one more takes the host down (default none)
  --oom-down-ms MS         how long an OOM keeps the host unreachable, before --time-scale (default ${SIM_DEFAULTS.oomDownMs})
  --tpm N                  with --profile provider: the account's tokens per minute (answers 429 with reset headers past it)
  --rpm N                  with --profile provider: the account's requests per minute
  --max-inflight N         with --profile provider: the account's calls in flight
  --fleet demo             start the demo fleet instead: ${demoPods()}
  --base-port P            the demo fleet's first port; its pods take P, P+1, … (default ${DEMO_BASE_PORT}, 0 = any free ports)
  -h, --help               show this help
`;

/** "4 pods (demo-chat ×2, …)": the fleet's shape for the help, from the fleet itself. */
function demoPods(): string {
  const models = Object.entries(DEMO_FLEET);
  const count = models.reduce((n, [, pods]) => n + pods.length, 0);
  return `${count} pods (${models.map(([m, pods]) => (pods.length > 1 ? `${m} ×${pods.length}` : m)).join(", ")})`;
}

// Flag → option key, for the flags whose value is a number.
const NUMERIC = {
  port: "port",
  "max-num-seqs": "maxNumSeqs",
  "max-waiting": "maxWaiting",
  "listen-backlog": "listenBacklog",
  "service-ms": "serviceMs",
  "ms-per-output-token": "msPerOutputToken",
  "tokens-per-second": "tokensPerSecond",
  "output-tokens": "defaultOutputTokens",
  seed: "seed",
  "time-scale": "timeScale",
  "oom-at": "oomAt",
  "oom-down-ms": "oomDownMs",
} as const satisfies Record<string, keyof SimOptions>;

/** Every flag `sluice sim` accepts (node:util parseArgs options); the help has a line for each. */
export const OPTIONS = {
  ...(Object.fromEntries(Object.keys(NUMERIC).map((k) => [k, { type: "string" }])) as Record<
    keyof typeof NUMERIC,
    { type: "string" }
  >),
  host: { type: "string" },
  model: { type: "string" },
  overflow: { type: "string" },
  "echo-prefix": { type: "string" },
  profile: { type: "string" },
  tpm: { type: "string" },
  rpm: { type: "string" },
  "max-inflight": { type: "string" },
  fleet: { type: "string" },
  "base-port": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

/** Where `main` writes, and what stops it; tests pass their own, the CLI uses the process's. */
export interface SimCliIo {
  out?: (line: string) => void;
  err?: (line: string) => void;
  /** Stops the sim like SIGINT does. */
  signal?: AbortSignal;
}

/** Runs `sluice sim` with the arguments after `sim`; resolves to the exit code. */
export async function main(argv: string[], io: SimCliIo = {}): Promise<number> {
  const out = io.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const err = io.err ?? ((line: string) => process.stderr.write(`${line}\n`));
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseCliArgs(argv, OPTIONS));
  } catch (e) {
    err(`sluice sim: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help === true) {
    out(USAGE);
    return 0;
  }
  try {
    const stop = await (values.fleet !== undefined ? startDemoFleet(values, out) : startOne(values, out));
    await untilStopped(io.signal);
    await stop();
    return 0;
  } catch (e) {
    if (e instanceof UsageError || isConfigError(e)) {
      err(`sluice sim: ${(e as Error).message}`);
      return 2;
    }
    throw e;
  }
}

/** A flag value the simulator cannot use. */
class UsageError extends Error {
  override readonly name = "UsageError";
}

async function startOne(values: Record<string, string | boolean | undefined>, out: (l: string) => void) {
  const profileName = values.profile as string | undefined;
  if (profileName !== undefined && !isSimProfileName(profileName)) {
    throw new UsageError(
      `--profile: expected one of ${Object.keys(SIM_PROFILES).join(", ")}, got "${profileName}"`,
    );
  }
  const account = ["tpm", "rpm", "max-inflight"].filter((f) => values[f] !== undefined);
  if (account.length > 0) {
    if (profileName !== "provider") throw new UsageError(`--${account[0]}: only with --profile provider`);
    return startAccount(values, out);
  }
  const opts: SimOptions = { ...(profileName ? SIM_PROFILES[profileName] : {}) };
  for (const [flag, key] of Object.entries(NUMERIC)) {
    const raw = values[flag] as string | undefined;
    if (raw !== undefined) opts[key] = toNumber(flag, raw);
  }
  if (values.host !== undefined) opts.host = values.host as string;
  if (values.model !== undefined) opts.model = values.model as string;
  if (values.overflow !== undefined) opts.overflow = values.overflow as SimOptions["overflow"];
  if (values["echo-prefix"] !== undefined) opts.echoPrefix = values["echo-prefix"] as string;
  const sim = await startSim(opts);
  const o = sim.options;
  const extra =
    (o.timeScale === 1 ? "" : `, time scale ${o.timeScale}`) +
    (Number.isFinite(o.oomAt) ? `, oom_at ${o.oomAt} (down ${o.oomDownMs} ms)` : "");
  out(
    `sim ${o.model} listening on ${sim.url} (max_num_seqs ${o.maxNumSeqs}, max_waiting ${o.maxWaiting}, ` +
      `overflow ${o.overflow}, service ${o.serviceMs} ms, ${o.tokensPerSecond} tok/s, seed ${o.seed}${extra})`,
  );
  return async () => {
    out(sim.report());
    await sim.close();
  };
}

/** `--profile provider` with account limits: the provider simulator of src/sim/provider.ts. */
async function startAccount(values: Record<string, string | boolean | undefined>, out: (l: string) => void) {
  const num = (flag: string) => {
    const raw = values[flag] as string | undefined;
    return raw === undefined ? undefined : toNumber(flag, raw);
  };
  const provider = await startProvider({
    port: num("port") ?? SIM_DEFAULTS.port,
    host: values.host as string | undefined,
    model: values.model as string | undefined,
    tpm: num("tpm"),
    rpm: num("rpm"),
    maxInflight: num("max-inflight"),
    serviceMs: num("service-ms"),
    msPerOutputToken: num("ms-per-output-token"),
    defaultOutputTokens: num("output-tokens"),
  });
  out(
    `provider account listening on ${provider.url} (tpm ${values.tpm ?? "-"}, rpm ${values.rpm ?? "-"}, max_inflight ${values["max-inflight"] ?? "-"})`,
  );
  return async () => {
    const s = provider.stats();
    out(
      `provider: served ${s.served}, tokens ${s.tokensServed}, throttled (429) tokens ${s.throttled.tokens} requests ${s.throttled.requests} in flight ${s.throttled.inflight}, max in flight ${s.maxInflightSeen}`,
    );
    await provider.close();
  };
}

async function startDemoFleet(
  values: Record<string, string | boolean | undefined>,
  out: (l: string) => void,
) {
  if (values.fleet !== "demo") throw new UsageError(`--fleet: expected "demo", got "${values.fleet}"`);
  const raw = values["base-port"] as string | undefined;
  const fleet = await demoFleet({
    basePort: raw === undefined ? DEMO_BASE_PORT : toNumber("base-port", raw),
    host: values.host as string | undefined,
  });
  out("demo fleet:");
  for (const [model, urls] of Object.entries(fleet.urls)) out(`  ${model.padEnd(12)} ${urls.join(" ")}`);
  return async () => {
    for (const pod of fleet.pods) out(pod.sim.report());
    await fleet.close();
  };
}

function toNumber(flag: string, raw: string): number {
  if (/^(inf|infinity)$/i.test(raw)) return Number.POSITIVE_INFINITY;
  const n = Number(raw);
  if (raw.trim() === "" || Number.isNaN(n))
    throw new UsageError(`--${flag}: expected a number, got "${raw}"`);
  return n;
}

function untilStopped(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      process.off("SIGINT", done);
      process.off("SIGTERM", done);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    if (signal?.aborted) return resolve();
    process.once("SIGINT", done);
    process.once("SIGTERM", done);
    signal?.addEventListener("abort", done, { once: true });
  });
}
