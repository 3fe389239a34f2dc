/**
 * The README's library quick start runs as written: its ```js block is extracted and executed
 * against the built package (`import … from "sluice"` resolves to this package's own exports).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

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
