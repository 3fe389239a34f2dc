#!/usr/bin/env node
/**
 * `sluice` command line: parses the subcommand and hands the rest of argv to its module. Each
 * subcommand lives in its own thin file and is loaded only when asked for.
 */
import { readFileSync } from "node:fs";

type Command = { summary: string; load: () => Promise<{ main(argv: string[]): Promise<number> }> };

const commands: Record<string, Command> = {
  serve: {
    summary: "run the gateway (--config FILE | --demo) [--port N] [--host H]",
    load: () => import("./serve.js"),
  },
  sim: {
    summary: "run simulated model servers (--profile NAME --port P | --fleet demo --base-port P)",
    load: () => import("./sim.js"),
  },
  status: {
    summary: "print a gateway's lane snapshot as a table (--url URL) [--json]",
    load: () => import("./status.js"),
  },
  load: {
    summary:
      "replay a seed's incident through sluice and straight to simulated pods, with a receipt (PROFILE)",
    load: () => import("./load.js"),
  },
  plan: {
    summary: "size limits with Little's law (--rps R --latency-s L [--tokens-per-request T --tpm N])",
    load: () => import("./plan.js"),
  },
};

function usage(): string {
  const rows = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(8)} ${c.summary}`);
  return [
    "usage: sluice <command> [options]",
    "       sluice --version",
    "",
    "commands:",
    ...rows,
    "",
    "options:",
    "  -v, --version  print sluice's version",
    "  -h, --help     show this help; `sluice <command> --help` lists the command's flags",
    "",
  ].join("\n");
}

/**
 * The package's version, read from its package.json: two levels up from both src/cli/main.ts
 * and dist/cli/main.js, and always shipped in the package.
 */
function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "-h" || name === "--help" || name === "help") {
    process.stdout.write(usage());
    return name === undefined ? 2 : 0;
  }
  if (name === "-v" || name === "--version" || name === "version") {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  const command = commands[name];
  if (command === undefined) {
    process.stderr.write(`sluice: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  const module = await command.load();
  return module.main(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`sluice: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
