/**
 * `sluice serve`: flags and config → a running gateway (thin; the work is in src/gateway).
 *
 *   sluice serve --config FILE     (or SLUICE_CONFIG)
 *   sluice serve --demo            the built-in simulated fleet behind the embedded demo config
 *
 * SIGTERM/SIGINT drain: stop admitting (503 `draining`), finish what is in flight within
 * `admission.drain_timeout_s` (then cut what is still running), exit 0.
 * SIGHUP reloads the config file in place (`reload.ts`); an invalid one keeps the old config.
 */
import cluster from "node:cluster";
import type { ParseArgsConfig } from "node:util";
import { demoConfig } from "../config/demo.js";
import { loadConfigFile, resolveConfigPath } from "../config/load.js";
import type { GatewayConfig } from "../config/schema.js";
import { isSluiceError, StoreUnavailableError } from "../core/errors.js";
import { Gateway } from "../gateway/gateway.js";
import { demoFleet } from "../sim/fleet.js";
import { parseCliArgs } from "./args.js";
import { reloadOnSighup } from "./reload.js";

const USAGE = `usage: sluice serve [--config FILE | --demo] [--port N] [--host H] [--workers N]

  --config FILE   gateway config (YAML); default: $SLUICE_CONFIG
  --demo          start the simulated demo fleet and serve it (no setup needed)
  --port N        listen on this port instead of the config's \`listen\` (0 = any free port)
  --host H        listen on this address instead of the config's \`listen\`
  --workers N     run N gateway processes sharing the port and every budget (needs store: redis://…)
  -h, --help      show this help
`;

/** Every flag `sluice serve` accepts (node:util parseArgs options); the help has a line for each. */
export const OPTIONS = {
  config: { type: "string" },
  demo: { type: "boolean" },
  port: { type: "string" },
  host: { type: "string" },
  workers: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

export async function main(argv: string[]): Promise<number> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse(argv);
  } catch (error) {
    process.stderr.write(`sluice serve: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (args.values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  let config: GatewayConfig;
  let closeFleet: (() => Promise<void>) | undefined;
  let configPath: string | undefined;
  try {
    if (args.values.demo) {
      const fleet = await demoFleet();
      closeFleet = fleet.close;
      config = demoConfig({
        chat: fleet.urls["demo-chat"] ?? [],
        embed: fleet.urls["demo-embed"] ?? [],
        ocr: fleet.urls["demo-ocr"] ?? [],
      });
    } else {
      const path = resolveConfigPath(args.values.config);
      if (path === undefined) {
        process.stderr.write(
          `sluice serve: no config (pass --config FILE, set SLUICE_CONFIG, or use --demo)\n\n${USAGE}`,
        );
        return 2;
      }
      // The environment is the one the gateway reads upstream keys from: a missing one refuses to start.
      config = await loadConfigFile(path, { env: process.env });
      configPath = path;
    }
  } catch (error) {
    await closeFleet?.();
    if (isSluiceError(error)) {
      process.stderr.write(`sluice serve: invalid config\n${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const port = args.values.port === undefined ? config.listen.port : Number(args.values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`sluice serve: --port must be 0–65535, got "${args.values.port}"\n`);
    await closeFleet?.();
    return 2;
  }
  const workers = args.values.workers === undefined ? 1 : Number(args.values.workers);
  if (!Number.isInteger(workers) || workers < 1 || workers > 64) {
    process.stderr.write(`sluice serve: --workers must be 1–64, got "${args.values.workers}"\n`);
    await closeFleet?.();
    return 2;
  }
  if (workers > 1 && config.store.kind !== "redis") {
    process.stderr.write(
      "sluice serve: --workers > 1 needs store: redis://… so the processes share every budget " +
        "(with store: memory each would hold its own limits)\n",
    );
    await closeFleet?.();
    return 2;
  }
  if (workers > 1 && cluster.isPrimary) return runWorkers(workers);
  const gateway = new Gateway({ config });
  const host = args.values.host ?? config.listen.host;
  let url: string;
  try {
    url = await gateway.listen(port, host);
  } catch (error) {
    process.stderr.write(`sluice serve: ${startFailure(error, host, port)}\n`);
    // The store's connections and the pools are closed, so the process ends; should anything
    // still hold it open, it exits all the same (a start that failed must never hang).
    await Promise.race([gateway.close().catch(() => {}), new Promise((r) => setTimeout(r, 5000).unref())]);
    await closeFleet?.();
    setTimeout(() => process.exit(2), 1000).unref();
    return 2;
  }
  const lines = [
    `sluice gateway listening on ${url}`,
    // Through `npx` or `npm start` the shell's process is npm's, not this one: a SIGHUP sent there
    // kills npm and orphans the gateway. Say which pid takes it.
    `  pid:       ${process.pid}  (reload the config: kill -HUP ${process.pid})`,
    `  models:    ${config.models.map((m) => m.name).join(", ")}`,
    `  dashboard: ${url}/`,
    `  metrics:   ${url}/metrics`,
    `  telemetry: ${url}/api/telemetry/lanes  (stream: ${url}/api/telemetry/stream)`,
  ];
  if (args.values.demo) {
    lines.push(
      `  try:       curl -s ${url}/v1/chat/completions -H 'content-type: application/json' \\`,
      `               -d '{"model":"demo-chat","messages":[{"role":"user","content":"hi"}]}'`,
    );
  }
  // Valid but probably not what was meant (a bound another makes unreachable, …): said at start.
  for (const warning of config.warnings) lines.push(`  warning:   ${warning}`);
  process.stderr.write(`${lines.join("\n")}\n`);
  const stopReloading = reloadOnSighup(gateway, configPath);
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(`sluice: ${signal}: draining\n`);
      stopReloading();
      void gateway
        .drain()
        .then((cut) => {
          if (cut > 0)
            process.stderr.write(`sluice: drain_timeout_s passed: cut ${cut} requests still running\n`);
        })
        .then(() => closeFleet?.())
        .then(() => {
          // Everything is closed; should a peer still hold a socket open, the process exits anyway.
          setTimeout(() => process.exit(0), 1000).unref();
          resolve(0);
        });
    };
    process.once("SIGTERM", () => stop("SIGTERM"));
    process.once("SIGINT", () => stop("SIGINT"));
  });
}

/**
 * Why the gateway could not start, naming what to change: the fleet store (`store`, its URL with
 * the password hidden, as the error carries it) or the address (`listen`, or --port/--host).
 */
function startFailure(error: unknown, host: string, port: number): string {
  if (error instanceof StoreUnavailableError)
    return (
      `cannot start: \`store\`: ${error.detail}\n` +
      "  check the store URL in the config and that Redis is running and reachable from here"
    );
  const { code, syscall, message } = error as NodeJS.ErrnoException;
  if (syscall === "listen" || code === "EADDRINUSE" || code === "EACCES" || code === "EADDRNOTAVAIL")
    return (
      `cannot start: \`listen\` ${host}:${port}: ${code ?? "error"} (${message})\n` +
      "  another process holds the port, or the address is not this host's: change `listen` in the config, or pass --port/--host"
    );
  return `cannot start: ${error instanceof Error ? error.message : String(error)}`;
}

/**
 * The primary of `--workers N`: forks N copies of this command (each a full gateway on the shared
 * port, counting through the store), passes SIGTERM/SIGINT/SIGHUP on, and exits when they have.
 */
function runWorkers(n: number): Promise<number> {
  const children = Array.from({ length: n }, () => cluster.fork());
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const)
    process.on(signal, () => {
      for (const child of children) child.process.kill(signal);
    });
  return new Promise<number>((resolve) => {
    let left = n;
    let worst = 0;
    cluster.on("exit", (_worker, code) => {
      worst = Math.max(worst, code ?? 1);
      if (--left === 0) resolve(worst);
    });
  });
}

function parse(argv: string[]) {
  return parseCliArgs(argv, OPTIONS);
}
