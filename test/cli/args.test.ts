/**
 * A mistyped flag is answered like a config error (issue 25 item 11): what was wrong, what the
 * flag takes or the flags there are, a "did you mean", exit 2 — never Node's parser wording
 * ("argument is ambiguous", "To specify a positional argument starting with a '-'…"). Run as a
 * user runs them: real processes through src/cli/main.ts.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LOAD_PROFILES } from "../../src/load/profiles/index.js";
import { sluice } from "../helpers/index.js";

/** Phrases of node:util parseArgs' own errors, which a user should never see. */
const NODE_WORDING = /ambiguous|To specify|Did you forget|Unknown option/;

describe("flags said wrong", { timeout: 60_000 }, () => {
  test("sluice load --list lists the profiles", async () => {
    const r = await sluice("load", "--list");
    assert.equal(r.code, 0, r.stderr);
    for (const { name } of LOAD_PROFILES) assert.match(r.stdout, new RegExp(`^  ${name} `, "m"));
  });

  test("a negative number is the flag's value, refused by what the flag expects", async () => {
    const r = await sluice("plan", "--rps", "-3", "--latency-s", "2");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--rps: expected a number > 0, got "-3"/);
    assert.doesNotMatch(r.stderr, NODE_WORDING);
  });

  test("an unknown flag names the nearest one and lists the rest", async () => {
    const r = await sluice("load", "ocr-flood", "--scal", "1");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown flag --scal; did you mean --scale\?/);
    assert.match(r.stderr, /--receipt/);
    assert.doesNotMatch(r.stderr, NODE_WORDING);
  });

  test("a value flag with no value, and a switch given one", async () => {
    const missing = await sluice("status", "--url");
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--url needs a value/);
    const switched = await sluice("plan", "--json=yes", "--rps", "1", "--latency-s", "1");
    assert.equal(switched.code, 2);
    assert.match(switched.stderr, /--json takes no value/);
    for (const r of [missing, switched]) assert.doesNotMatch(r.stderr, NODE_WORDING);
  });

  test("sluice serve too: a mistyped flag names the one meant", async () => {
    const r = await sluice("serve", "--demo", "--prot", "3");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown flag --prot; did you mean --port\?/);
    assert.doesNotMatch(r.stderr, NODE_WORDING);
  });

  test("a flag-like value says how to pass it", async () => {
    const r = await sluice("status", "--url", "--json");
    // `--json` after `--url` is a flag: --url got no value, and the answer says how to give one.
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--url needs a value, and what follows it looks like a flag \(write --url=VALUE/);
    assert.doesNotMatch(r.stderr, NODE_WORDING);
  });
});
