/**
 * The README's facts hold: its library quick start runs as written (its ```js block is extracted
 * and executed against the built package: `import … from "sluice"` resolves to this package's
 * own exports), its demo has as many pods as the demo fleet, and its commands use real flags.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { OPTIONS as SERVE } from "../../src/cli/serve.js";
import { OPTIONS as SIM } from "../../src/cli/sim.js";
import { OPTIONS as STATUS } from "../../src/cli/status.js";
import { demoConfig } from "../../src/config/demo.js";
import { DEMO_BASE_PORT, DEMO_FLEET } from "../../src/sim/fleet.js";
import { SIM_PROFILES } from "../../src/sim/profiles.js";

test("the README library quick start runs as written and reports answers and refusals", () => {
  const readme = readFileSync("README.md", "utf8");
  const block = /## The library quick start\s+```js\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block, "README has a ```js quick start block");
  // Written inside the package so that `import "sluice"` resolves to it (package self-reference).
  const dir = mkdtempSync(join(process.cwd(), ".scratch-readme-"));
  const file = join(dir, "quickstart.mjs");
  writeFileSync(file, block);
  try {
    const out = execFileSync(process.execPath, [file], { encoding: "utf8", timeout: 20_000 });
    // bulk: limit 2 minus the interactive reserve, + queue 8 → nine answered, eleven refused
    assert.match(out, /9 answered, 11 refused at once/);
    assert.match(out, /inflight: 0/);
  } finally {
    execFileSync("rm", ["-rf", dir]);
  }
});

/** The README's `## Commands` shell block, one command per line, comments cut off. */
function commandLines(readme: string): string[] {
  const block = /## Commands[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block, "README has a ```sh block under ## Commands");
  return block
    .split("\n")
    .map((line) => line.replace(/#.*$/, "").trim())
    .filter((line) => line !== "");
}

const NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"];

test("the README counts the demo fleet's pods and ports as src/sim/fleet.ts starts them", () => {
  const readme = readFileSync("README.md", "utf8");
  const count = Object.values(DEMO_FLEET).reduce((n, pods) => n + pods.length, 0);
  const word = NUMBER_WORDS[count]!;
  assert.match(readme, new RegExp(`\`npm start\` starts ${word} simulated pods`));
  const last = DEMO_BASE_PORT + count - 1;
  assert.match(
    readme,
    new RegExp(`--base-port ${DEMO_BASE_PORT} .*the demo's ${word} pods, on ports ${DEMO_BASE_PORT}–${last}`),
  );
});

test("the README's commands use only flags their parsers accept, and show serve's, status's and sim's main ones", () => {
  const options: Record<string, Record<string, unknown>> = { serve: SERVE, sim: SIM, status: STATUS };
  const shown: Record<string, Set<string>> = { serve: new Set(), sim: new Set(), status: new Set() };
  for (const line of commandLines(readFileSync("README.md", "utf8"))) {
    const [bin, command, ...rest] = line.split(/\s+/);
    assert.equal(bin, "sluice", line);
    assert.ok(command !== undefined && Object.hasOwn(options, command), `unknown command in "${line}"`);
    for (const flag of rest.filter((w) => w.startsWith("--")).map((w) => w.slice(2))) {
      assert.ok(Object.hasOwn(options[command]!, flag), `sluice ${command} has no --${flag} ("${line}")`);
      shown[command]!.add(flag);
    }
  }
  // serve's and status's flags are few: all of them. sim's knobs live in docs/sim.md.
  for (const command of ["serve", "status"])
    for (const flag of Object.keys(options[command]!).filter((f) => f !== "help"))
      assert.ok(shown[command]!.has(flag), `README shows no sluice ${command} --${flag}`);
  for (const flag of ["profile", "port", "fleet", "base-port"])
    assert.ok(shown.sim!.has(flag), `README shows no sluice sim --${flag}`);
  const profiles = /--profile ((?:[\w-]+ \| )+[\w-]+)/.exec(readFileSync("README.md", "utf8"))?.[1];
  assert.deepEqual(profiles?.split(" | "), Object.keys(SIM_PROFILES));
});

test("the README's two commands are npm's install with the package's own test and start scripts", () => {
  const readme = readFileSync("README.md", "utf8");
  const scripts = (JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> })
    .scripts;
  const block = /## Two commands\s+```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block, "README has a ```sh block under ## Two commands");
  const commands = block
    .split("\n")
    .map((line) => line.replace(/#.*$/, "").trim())
    .filter((line) => line !== "");
  assert.deepEqual(commands, ["npm install && npm test", "npm install && npm start"]);
  assert.ok(
    scripts.test && scripts.start && scripts.prepare,
    "test, start and prepare (the build on install)",
  );
  assert.match(scripts.start, /serve --demo/, "npm start is the gateway on the demo fleet");
});

test("the flood's numbers in the README are the demo chat model's limit and queue", () => {
  const readme = readFileSync("README.md", "utf8");
  const said = /# flood it: past (\d+) in flight \+ (\d+) queued/.exec(readme);
  assert.ok(said, "the flood comment names its limit and queue");
  const chat = demoConfig({
    chat: ["http://127.0.0.1:1"],
    embed: ["http://127.0.0.1:2"],
    ocr: ["http://127.0.0.1:3"],
  }).models.find((m) => m.name === "demo-chat");
  assert.ok(chat);
  assert.deepEqual([Number(said[1]), Number(said[2])], [chat.maxConcurrentRequests, chat.queueLimit]);
});
