/**
 * The shape docs/architecture.md promises: no import cycles in src/ (type-only imports
 * included), no file in src/ over 400 lines, and the Redis scripts shipped as written.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { filesUnder } from "../helpers/index.js";

describe("the source tree", () => {
  test("has no import cycles", () => {
    const run = spawnSync(process.execPath, ["scripts/check-cycles.mjs"], { encoding: "utf8" });
    assert.equal(run.status, 0, run.stderr);
  });

  test("ships the Lua scripts as they are in src/store/redis/lua (the generated module is up to date)", () => {
    const run = spawnSync(process.execPath, ["scripts/assemble-lua.mjs", "--check"], { encoding: "utf8" });
    assert.equal(run.status, 0, run.stderr);
  });

  test("has no file in src/ over 400 lines", () => {
    const long = filesUnder("src", (f) => f.endsWith(".ts"))
      .map((f) => [f, readFileSync(f, "utf8").split("\n").length - 1] as const)
      .filter(([, lines]) => lines > 400);
    assert.deepEqual(long, []);
  });
});
