/**
 * The README's "In front of vLLM, and coming from LiteLLM" and "Use it from another project"
 * sections hold (issue 25 item 15): the vLLM example is a valid config that gives each pod the
 * server's --max-num-seqs; the LiteLLM table's sluice keys exist (and the one it calls not built
 * is not a key); TLS on the listener is refused as not built, as it says; the entry points it names
 * are the package's exports and export what it says; `npm pack` ships the built gateway.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { parse } from "yaml";
import { parseConfig } from "../../src/config/schema.js";

const README = readFileSync("README.md", "utf8");

function section(title: string): string {
  const at = README.indexOf(`## ${title}`);
  assert.ok(at >= 0, `README has "## ${title}"`);
  const end = README.indexOf("\n## ", at + 3);
  return README.slice(at, end < 0 ? undefined : end);
}

describe("README: from another project, vLLM and LiteLLM", { timeout: 60_000 }, () => {
  test("the vLLM example is a valid config: each pod carries its --max-num-seqs, the lane their sum", () => {
    const text = section("In front of vLLM, and coming from LiteLLM");
    const yaml = /```yaml\n([\s\S]*?)```/.exec(text)?.[1];
    assert.ok(yaml);
    const seqs = Number(/--max-num-seqs (\d+)/.exec(yaml)?.[1]);
    const c = parseConfig(parse(yaml));
    const m = c.models[0]!;
    assert.deepEqual(
      m.pods.map((p) => p.maxInflight),
      [seqs, seqs],
    );
    assert.equal(m.maxConcurrentRequests, 2 * seqs);
    assert.ok(m.pods.every((p) => p.metricsUrl !== undefined));
  });

  test("the LiteLLM table names keys that exist, and what it calls not built is refused or absent", () => {
    const text = section("In front of vLLM, and coming from LiteLLM");
    const pod = { url: "http://10.0.0.5:8000", max_inflight: 4 };
    // Every sluice key the table maps to is accepted.
    parseConfig({
      auth: {
        keys: [{ id: "a", sha256: "a".repeat(64), max_inflight: 2, tpm: 100, rpm: 10, tenant: "team" }],
      },
      tenants: { team: { tpm: 1000, rpm: 60 } },
      accounts: { prod: { rpm: 60, tpm: 1000, max_inflight: 4, models: ["m"] } },
      models: [{ name: "m", rpm: 10, tpm: 10_000, pods: [pod] }],
    });
    for (const key of ["auth.keys[].rpm", "tenants.NAME.rpm", "auth.keys[].tenant"])
      assert.ok(text.includes(`\`${key}\``), key);
    // A team's in-flight bound: the table calls it not built, and the config refuses it saying so.
    assert.match(text, /a team's in-flight bound is not built yet/);
    assert.throws(
      () =>
        parseConfig({
          tenants: { team: { max_inflight: 4 } },
          models: [{ name: "m", pods: [pod] }],
        }),
      /not built/,
    );
    // TLS on the listener: refused, saying it is not built and what to do.
    assert.match(text, /TLS on the gateway's own listener is not built/);
    assert.throws(
      () => parseConfig({ tls: { cert: "c.pem", key: "k.pem" }, models: [{ name: "m", pods: [pod] }] }),
      /tls: TLS on the gateway's own listener is not built yet; terminate TLS in a proxy/,
    );
  });

  test("the entry points it names are the package's exports and export what it says", () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8")) as {
      name: string;
      version: string;
      exports: Record<string, unknown>;
      bin: Record<string, string>;
    };
    assert.deepEqual(Object.keys(pkg.exports).sort(), [".", "./client", "./redis", "./testing"]);
    assert.ok(pkg.bin.sluice);
    const out = execFileSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const a = await import("sluice"); const b = await import("sluice/client"); const c = await import("sluice/testing"); const d = await import("sluice/redis");
         console.log([typeof a.Governor, typeof a.withPriority, typeof a.QueueFullError, typeof b.createSluiceFetch, typeof c.ManualClock, typeof c.FixedWidth, typeof c.AimdWidth, typeof d.RedisStore].join(","));`,
      ],
      { encoding: "utf8" },
    );
    assert.equal(out.trim(), Array(8).fill("function").join(","));
    assert.match(
      section("Use it from another project"),
      new RegExp(`${pkg.name}-${pkg.version.replaceAll(".", "\\.")}\\.tgz`),
    );
  });

  test("npm pack ships the compiled gateway, its command and its dashboard", () => {
    const listed = JSON.parse(
      execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { encoding: "utf8" }),
    ) as { files: { path: string }[] }[];
    const files = new Set(listed[0]!.files.map((f) => f.path));
    for (const f of [
      "dist/index.js",
      "dist/client/index.js",
      "dist/store/redis/index.js",
      "dist/testing.js",
      "dist/cli/main.js",
      "dist/dashboard/page/index.html",
    ])
      assert.ok(files.has(f), `the tarball lacks ${f}`);
  });
});
