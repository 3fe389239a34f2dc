/**
 * `import { createSluiceFetch } from "sluice/client"` resolves (package `exports["./client"]`) to
 * the built client, with its typings next to it. Run from inside the package, so the import is
 * the package's self-reference, as in the README test.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";

test("package.json exports ./client, built to dist/client with typings", () => {
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as {
    exports: Record<string, { types: string; import: string }>;
  };
  assert.deepEqual(pkg.exports["./client"], {
    types: "./dist/client/index.d.ts",
    import: "./dist/client/index.js",
  });
  for (const file of Object.values(pkg.exports["./client"]!)) assert.ok(existsSync(file), `${file} is built`);
  const out = execFileSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      'import { createSluiceFetch } from "sluice/client"; const f = createSluiceFetch({ baseUrl: "http://127.0.0.1:9" }); console.log(typeof f, JSON.stringify(f.windows()));',
    ],
    { encoding: "utf8" },
  );
  assert.equal(out.trim(), "function []");
});
