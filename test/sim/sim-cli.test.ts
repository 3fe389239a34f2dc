import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { main } from "../../src/cli/sim.js";
import { waitFor } from "../helpers/index.js";
import { get } from "./helpers.js";

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) } };
}

describe("sluice sim (CLI)", () => {
  test("returns 2 and names the flag for an unknown flag", async () => {
    const c = capture();
    assert.equal(await main(["--max-num-seq", "4"], c.io), 2);
    assert.match(c.err.join("\n"), /--max-num-seq/);
    assert.match(c.err.join("\n"), /usage: sluice sim/);
  });

  test("returns 2 for a value the sim cannot use", async () => {
    for (const argv of [
      ["--max-num-seqs", "lots"],
      ["--overflow", "drop"],
      ["--max-num-seqs", "0"],
      ["--fleet", "big"],
    ]) {
      const c = capture();
      assert.equal(await main([...argv, "--port", "0"], c.io), 2, argv.join(" "));
      assert.match(c.err.join("\n"), /sluice sim: /);
    }
  });

  test("starts one sim with the given flags, prints its URL, and returns 0 when stopped", async () => {
    const c = capture();
    const ac = new AbortController();
    const exit = main(["--port", "0", "--max-num-seqs", "3", "--max-waiting", "inf", "--service-ms", "0"], {
      ...c.io,
      signal: ac.signal,
    });
    await waitFor("the listening line", () => c.out.length > 0);
    const url = /listening on (http:\/\/\S+)/.exec(c.out[0]!)?.[1];
    assert.ok(url, c.out[0]);
    assert.match(c.out[0]!, /max_num_seqs 3, max_waiting Infinity/);
    assert.equal((await get(url, "/health")).status, 200);
    ac.abort();
    assert.equal(await exit, 0);
  });

  test("starts the demo fleet and prints each model's URLs", async () => {
    const c = capture();
    const ac = new AbortController();
    const exit = main(["--fleet", "demo", "--base-port", "0"], { ...c.io, signal: ac.signal });
    await waitFor("the fleet listing", () => c.out.length >= 4);
    assert.match(c.out.join("\n"), /demo-chat +http:\/\/127\.0\.0\.1:\d+ http:\/\/127\.0\.0\.1:\d+/);
    assert.match(c.out.join("\n"), /demo-ocr +http:\/\/127\.0\.0\.1:\d+/);
    ac.abort();
    assert.equal(await exit, 0);
  });
});
