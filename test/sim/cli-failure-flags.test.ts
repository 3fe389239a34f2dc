/** `sluice sim`'s flags for the failure modes (an OOM point, a time scale), and its report at exit. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { main } from "../../src/cli/sim.js";
import { waitFor } from "../helpers/index.js";

test("--oom-at, --oom-down-ms and --time-scale are applied and shown; the exit prints what the sim saw", async () => {
  const out: string[] = [];
  const ac = new AbortController();
  const exit = main(
    ["--profile", "vllm", "--port", "0", "--oom-at", "12", "--oom-down-ms", "5000", "--time-scale", "0.1"],
    { out: (l) => out.push(l), err: (l) => out.push(l), signal: ac.signal },
  );
  await waitFor("the listening line", () => out.length > 0);
  assert.match(out[0]!, /max_num_seqs 64, .*time scale 0\.1, oom_at 12 \(down 5000 ms\)/);
  ac.abort();
  assert.equal(await exit, 0);
  assert.match(out.at(-1)!, /saw: max concurrency 0 .*OOM events 0 \(oom_at 12, 0 requests cut\)/);
});

test("a time scale of 0 exits 2 naming the option", async () => {
  const err: string[] = [];
  assert.equal(await main(["--port", "0", "--time-scale", "0"], { err: (l) => err.push(l) }), 2);
  assert.match(err.join("\n"), /timeScale: expected a finite number > 0/);
});
