/**
 * Refusals in the log (issue 13, src/gateway/refusal-log.ts): at `info` they are counted into one
 * `"refusals"` line a second (by lane, reason, key and status) instead of a line each; at `debug`
 * each keeps its own `"request"` line. The metrics count every one either way.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import { chat, held, LogCapture, model, type Stack, SUITE, startStack, waitFor } from "./helpers.js";

/** A gateway whose only lane has one slot, taken by a held call, and no queue: every call is refused. */
async function fullStack(level: string, log: LogCapture): Promise<{ stack: Stack; hold: AbortController }> {
  const stack = await startStack({
    sims: [{ maxNumSeqs: 1, serviceMs: 60_000 }],
    config: ([pod]) => ({ models: [model("full", [pod!])] }),
    logger: pino({ level }, log.stream),
  });
  const hold = new AbortController();
  void held(stack.url, "full", hold.signal);
  await waitFor("the held call to run", () => stack.sims[0]!.stats().running === 1);
  return { stack, hold };
}

const PINO_INFO = 30;
const PINO_DEBUG = 20;

describe("refusals in the log", SUITE, () => {
  test("at info, refusals are counted into one line a second, not a line each", async () => {
    const log = new LogCapture();
    const { stack, hold } = await fullStack("info", log);
    const refusals = 12;
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: refusals }, () => chat(stack.url, "full")));
    const tookMs = performance.now() - started;
    for (const a of answers) assert.equal(a.status, 429);
    hold.abort();
    await stack.close(); // writes what is counted
    const records = log.records();
    assert.equal(
      records.filter((r) => r.msg === "request" && r.outcome === "refused").length,
      0,
      "no line per refusal",
    );
    const counted = records.filter((r) => r.msg === "refusals");
    // One line a second at most, plus the one the close writes: a loaded machine can spread the
    // refusals over more than one second (two lines were seen with both cores busy).
    assert.ok(counted.length >= 1, "the refusals are counted");
    assert.ok(
      counted.length <= Math.ceil(tookMs / 1000) + 1,
      `${counted.length} lines for ${refusals} refusals over ${tookMs.toFixed(0)} ms`,
    );
    for (const line of counted) assert.equal(line.level, PINO_INFO);
    assert.equal(
      counted.reduce((sum, line) => sum + (line.refusals as number), 0),
      refusals,
    );
    const by = counted.flatMap((line) => line.by as { lane: string; count: number }[]);
    for (const b of by)
      assert.deepEqual(
        { ...b, count: 0 },
        { lane: "full", reason: "queue_full", key: "anonymous", status: 429, count: 0 },
      );
    assert.equal(
      by.reduce((sum, b) => sum + b.count, 0),
      refusals,
    );
  });

  test("at debug, each refusal has its own request line and nothing is counted", async () => {
    const log = new LogCapture();
    const { stack, hold } = await fullStack("debug", log);
    const answers = [await chat(stack.url, "full"), await chat(stack.url, "full")];
    hold.abort();
    await stack.close();
    const records = log.records();
    for (const a of answers) {
      const line = records.find(
        (r) => r.msg === "request" && r.request_id === a.headers["x-sluice-request-id"],
      );
      assert.ok(line !== undefined, "a line for the refusal");
      assert.equal(line.level, PINO_DEBUG);
      assert.equal(line.outcome, "refused");
      assert.equal(line.reason, "queue_full");
      assert.equal(line.status, 429);
    }
    assert.equal(records.filter((r) => r.msg === "refusals").length, 0);
  });
});
