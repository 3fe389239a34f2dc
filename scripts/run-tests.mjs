#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with node's own runner through tsx.
// Node 20's `--test` does not expand globs, so the files are listed here.
// Usage: npm test [-- filter-substring ...]
//
// Every test has a deadline (SLUICE_TEST_TIMEOUT_MS, default 120 s, set by test-deadline.mjs in
// each file's process): a lost wake-up or any other hang then fails that test by name instead of
// stalling the run (a CI job that never ends says nothing about which test hung). Generous,
// because the slowest fleet tests start real processes on a loaded machine; a test that needs
// longer says so with its own `{ timeout }`. Each file as a whole (hooks included) has a backstop,
// SLUICE_TEST_FILE_TIMEOUT_MS (default 15 min, node's --test-timeout, which bounds files only).
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
/** A positive integer of ms from the environment variable `name`, else `fallback`. */
function ms(name, fallback) {
  const value = Number(process.env[name] ?? fallback);
  if (Number.isInteger(value) && value > 0) return value;
  console.error(`${name} must be a positive integer (ms), got "${process.env[name]}"`);
  process.exit(2);
}
const testTimeoutMs = ms("SLUICE_TEST_TIMEOUT_MS", 120_000);
const fileTimeoutMs = ms("SLUICE_TEST_FILE_TIMEOUT_MS", 15 * 60_000);
const result = spawnSync(
  process.execPath,
  [
    "--import",
    "./scripts/test-deadline.mjs",
    "--import",
    "tsx",
    "--test",
    "--test-concurrency=2",
    `--test-timeout=${fileTimeoutMs}`,
    "--test-reporter=spec",
    ...files,
  ],
  { stdio: "inherit", env: { ...process.env, SLUICE_TEST_TIMEOUT_MS: String(testTimeoutMs) } },
);
process.exit(result.status ?? 1);
