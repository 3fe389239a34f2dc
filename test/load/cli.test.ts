/**
 * `sluice load` as a user meets it: a scale a profile cannot run at and bad flags refused with exit 2 and
 * a message naming them, `--print-config` giving a config the gateway accepts, and a help line
 * for every flag.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { describe, test } from "node:test";
import { promisify } from "node:util";
import { parse } from "yaml";
import { main, OPTIONS } from "../../src/cli/load.js";
import { OPTIONS as PLAN_OPTIONS, main as planMain } from "../../src/cli/plan.js";
import { parseConfig } from "../../src/config/schema.js";

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t) },
  };
}

/** Flags named at the start of a help line (`  --name` or `  -x, --name`). */
function documented(help: string): string[] {
  return help
    .split("\n")
    .map((l) => /^\s+(?:-\w, )?--([\w-]+)/.exec(l)?.[1])
    .filter((f): f is string => f !== undefined);
}

describe("sluice load (CLI)", () => {
  test("provider-tokens with a time scale exits 2: a token bucket's minute is a real one", async () => {
    const c = capture();
    assert.equal(await main(["provider-tokens", "--scale", "0.1"], c.io), 2);
    assert.match(
      c.err.join(""),
      /--scale: profile provider-tokens runs in real time only \(--scale 1, got 0\.1\)/,
    );
    assert.equal(c.out.join(""), "");
  });

  test("autoscale without Redis exits 2 saying it needs Redis and where it looked", async () => {
    const run = promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", "load", "autoscale"],
      {
        env: { ...process.env, REDIS_URL: "redis://127.0.0.1:1" },
      },
    );
    const e = await run.then(
      () => assert.fail("autoscale ran without Redis"),
      (error: { code: number; stderr: string; stdout: string }) => error,
    );
    assert.equal(e.code, 2);
    assert.match(e.stderr, /autoscale cannot run here: .*needs Redis .*redis:\/\/127\.0\.0\.1:1/);
    assert.equal(e.stdout, "");
  });

  test("an unknown profile, no profile, or an unusable flag exits 2 naming it", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["ocr-floods"], /unknown profile "ocr-floods"; expected one of ocr-flood, shared-gpu/],
      [[], /expected one profile/],
      [["ocr-flood", "--scale", "0"], /--scale: expected a number > 0, got "0"/],
      [["ocr-flood", "--scale", "fast"], /--scale: expected a number > 0/],
      [["ocr-flood", "--only", "both"], /--only: expected sluice or direct/],
      [["ocr-flood", "--gateway", "localhost:8080"], /--gateway: expected an http\(s\) URL/],
      [["ocr-flood", "--sim-base-port", "70000"], /--sim-base-port: expected a port/],
      [["ocr-flood", "--scales", "1"], /--scales/],
      [["ocr-flood", "--baseline", "/nonexistent/receipt.json"], /--baseline \/nonexistent\/receipt\.json: /],
    ];
    for (const [argv, message] of cases) {
      const c = capture();
      assert.equal(await main(argv, c.io), 2, argv.join(" "));
      assert.match(c.err.join(""), message, argv.join(" "));
    }
  });

  test("--print-config prints a config the gateway accepts, its pods at --sim-base-port", async () => {
    const c = capture();
    assert.equal(await main(["ocr-flood", "--print-config", "--sim-base-port", "9400"], c.io), 0);
    const config = parseConfig(parse(c.out.join("")));
    const pods = config.models[0]!.pods.map((p) => p.url);
    assert.deepEqual(
      pods,
      Array.from({ length: 8 }, (_, i) => `http://127.0.0.1:${9400 + i}`),
    );
    assert.equal(config.routes[0]?.match, "/ocr/");
  });

  test("--help has one line for each flag it accepts and lists every profile", async () => {
    const c = capture();
    assert.equal(await main(["--help"], c.io), 0);
    const help = c.out.join("");
    const flags = documented(help);
    for (const name of Object.keys(OPTIONS))
      assert.equal(flags.filter((f) => f === name).length, 1, `--${name}`);
    assert.deepEqual(
      flags.filter((f) => !(f in OPTIONS)),
      [],
    );
    for (const p of [
      "ocr-flood",
      "shared-gpu",
      "panel-burst",
      "model-capacity",
      "autoscale",
      "provider-tokens",
    ]) {
      assert.match(help, new RegExp(`^  ${p} +seed 00\\d`, "m"));
    }
  });

  test("sluice --help lists load and plan", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [
      "--import",
      "tsx",
      "src/cli/main.ts",
      "--help",
    ]);
    assert.match(stdout, /^ {2}load /m);
    assert.match(stdout, /^ {2}plan /m);
  });
});

describe("sluice plan (CLI)", () => {
  test("--help has one line for each flag it accepts", async () => {
    const c = capture();
    assert.equal(await planMain(["--help"], c.io), 0);
    const flags = documented(c.out.join(""));
    for (const name of Object.keys(PLAN_OPTIONS))
      assert.equal(flags.filter((f) => f === name).length, 1, `--${name}`);
  });

  test("prints the sizing and a config snippet the gateway accepts", async () => {
    const c = capture();
    assert.equal(
      await planMain(["--rps", "20", "--latency-s", "4", "--pods", "4", "--per-pod-max", "24"], c.io),
      0,
    );
    const text = c.out.join("");
    assert.match(text, /Little's law +20 rps × 4 s = 80 calls in flight/);
    assert.match(text, /pods +4 × 24 = 96 calls in flight/);
    assert.match(text, /binds +traffic/);
    // The snippet's placeholders (MODEL, http://POD-1:8000) are valid as they stand.
    const m = parseConfig(parse(text.slice(text.indexOf("models:")))).models[0]!;
    assert.deepEqual(
      [m.maxConcurrentRequests, m.queueLimit, m.queueTimeoutMs, m.pods.length],
      [80, 320, 30_000, 4],
    );
  });

  test("--json prints the plan as data", async () => {
    const c = capture();
    const argv = [
      "--rps",
      "20",
      "--latency-s",
      "4",
      "--tokens-per-request",
      "1500",
      "--tpm",
      "1000000",
      "--json",
    ];
    assert.equal(await planMain(argv, c.io), 0);
    const p = JSON.parse(c.out.join(""));
    assert.equal(p.binds, "tokens");
    assert.equal(p.config.max_concurrent_requests, 44);
    assert.equal(p.config.tpm, 1_000_000);
  });

  test("a bad or missing number exits 2 naming the flag", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["--latency-s", "4"], /--rps is required/],
      [["--rps", "20"], /--latency-s is required/],
      [["--rps=-1", "--latency-s", "4"], /--rps: expected a number > 0, got "-1"/],
      [["--rps", "-1", "--latency-s", "4"], /--rps/],
      [["--rps", "20", "--latency-s", "soon"], /--latency-s: expected a number > 0, got "soon"/],
      [["--rps", "20", "--latency-s", "4", "--tpm", "90000"], /--tokens-per-request is required/],
      [["--rps", "20", "--latency-s", "4", "--pods", "2"], /--per-pod-max is required/],
      [
        ["--rps", "20", "--latency-s", "4", "--pods", "2", "--per-pod-max", "2.5"],
        /--per-pod-max: expected an integer ≥ 1/,
      ],
      [["--rps", "20", "--latency-s", "4", "--sample-s", "3"], /--from-metrics is required/],
      [["--from-metrics", "localhost:8000"], /--from-metrics: expected an http\(s\) URL/],
      [["--rps", "20", "--latency-s", "4", "--burst"], /--burst/],
    ];
    for (const [argv, message] of cases) {
      const c = capture();
      assert.equal(await planMain(argv, c.io), 2, argv.join(" "));
      assert.match(c.err.join(""), message, argv.join(" "));
    }
  });
});
