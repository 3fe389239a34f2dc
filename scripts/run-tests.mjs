#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with node's own runner through tsx.
// Node 20's `--test` does not expand globs, so the files are listed here.
// Usage: npm test [-- filter-substring ...]
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

function collect(dir, out) {
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) collect(path, out);
    else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = collect("src", collect("test", [])).filter(
  (f) => filters.length === 0 || filters.some((s) => f.includes(s)),
);
if (files.length === 0) {
  console.error(`no test files matched ${filters.join(" ")}`);
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  ["--import", "tsx", "--test", "--test-concurrency=2", "--test-reporter=spec", ...files],
  { stdio: "inherit" },
);
process.exit(result.status ?? 1);
