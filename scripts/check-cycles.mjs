#!/usr/bin/env node
// Fails when src/ has an import cycle (type-only imports included): the layers only point down.
// Usage: node scripts/check-cycles.mjs
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";

function collect(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) collect(path, out);
    else if (name.endsWith(".ts") && !name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

const files = collect("src");
const edges = new Map();
const spec = /(?:from|import)\s*\(?\s*["'](\.[^"']+)["']/g;
for (const file of files) {
  const targets = [];
  for (const m of readFileSync(file, "utf8").matchAll(spec)) {
    targets.push(normalize(join(dirname(file), m[1].replace(/\.js$/, ".ts"))));
  }
  edges.set(
    file,
    targets.filter((t) => edges.has(t) || files.includes(t)),
  );
}

const state = new Map(); // 1 = on the stack, 2 = done
const cycles = [];
function visit(file, stack) {
  state.set(file, 1);
  stack.push(file);
  for (const next of edges.get(file) ?? []) {
    if (state.get(next) === 1) cycles.push([...stack.slice(stack.indexOf(next)), next].join(" → "));
    else if (state.get(next) === undefined) visit(next, stack);
  }
  stack.pop();
  state.set(file, 2);
}
for (const file of files) if (!state.has(file)) visit(file, []);
if (cycles.length > 0) {
  console.error(`import cycles in src/ (${cycles.length}):\n${cycles.join("\n")}`);
  process.exit(1);
}
console.log(`no import cycles in ${files.length} files`);
