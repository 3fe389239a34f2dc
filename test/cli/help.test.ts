/**
 * The `sluice` command line as a user runs it (a real process through src/cli/main.ts):
 * `--version` prints the package's version, and every subcommand's `--help` has one line for
 * each flag its parser accepts (the parser's own option table, so a new flag without a help line
 * fails here) and no line for a flag it refuses.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { OPTIONS as SERVE } from "../../src/cli/serve.js";
import { OPTIONS as SIM } from "../../src/cli/sim.js";
import { OPTIONS as STATUS } from "../../src/cli/status.js";
import { sluice } from "../helpers/index.js";

const VERSION = (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version;

type Options = Record<string, { type: "string" | "boolean"; short?: string }>;

/** The help lines that document a flag: indented, starting with `--name` or `-x, --name`. */
function flagLines(help: string): Map<string, string[]> {
  const lines = new Map<string, string[]>();
  for (const line of help.split("\n")) {
    const m = /^\s+(?:-(\w), )?--([\w-]+)/.exec(line);
    if (m === null) continue;
    lines.set(m[2]!, [...(lines.get(m[2]!) ?? []), line]);
  }
  return lines;
}

describe("sluice (CLI)", () => {
  test("--version and -v print the package's version and exit 0", async () => {
    for (const flag of ["--version", "-v"]) {
      const r = await sluice(flag);
      assert.equal(r.code, 0, flag);
      assert.equal(r.stdout, `${VERSION}\n`, flag);
    }
  });

  test("--help lists the commands and --version; no command is a usage error (2)", async () => {
    const help = await sluice("--help");
    assert.equal(help.code, 0);
    for (const name of ["serve", "sim", "status"]) assert.match(help.stdout, new RegExp(`^  ${name} `, "m"));
    assert.match(help.stdout, /^ {2}-v, --version /m);
    const bare = await sluice();
    assert.equal(bare.code, 2);
    assert.equal(bare.stdout, help.stdout);
  });

  const commands: Array<[string, Options]> = [
    ["serve", SERVE],
    ["sim", SIM],
    ["status", STATUS],
  ];
  for (const [command, options] of commands) {
    test(`${command} --help has one line for each flag it accepts, and none for another`, async () => {
      const r = await sluice(command, "--help");
      assert.equal(r.code, 0, r.stderr);
      const documented = flagLines(r.stdout);
      for (const [name, spec] of Object.entries(options)) {
        const lines = documented.get(name) ?? [];
        assert.equal(lines.length, 1, `--${name}: ${lines.length} help lines\n${r.stdout}`);
        // The parser maps the short form (`-h`) to the same option, so its line names both.
        if (spec.short !== undefined)
          assert.match(lines[0]!, new RegExp(`^\\s+-${spec.short}, --${name}\\b`));
      }
      assert.deepEqual(
        [...documented.keys()].filter((name) => !Object.hasOwn(options, name)),
        [],
      );
    });
  }
});
