/**
 * Issue 22's chaos harness in CI: three real `sluice serve` replicas on a private redis-server
 * (each through a TCP proxy the harness can cut), two counting pods, random traffic (classes,
 * keys, streams, clients that leave), and every fault of the catalogue once, in a seeded random
 * order with random parameters. Judged at the pods, by call id:
 * - never above a limit, except by what docs/fleet.md allows the fault in force (bounds.ts);
 * - no waiter waits more than a heartbeat while the pods have room for it;
 * - no call runs twice;
 * - after the traffic stops, nothing is counted in Redis or in any replica;
 * - each replica's RSS stays under its bound.
 * A failure names its seed: CHAOS_SEED=<seed> npm test -- test/chaos replays the same draws
 * (the timing of a loaded machine does not replay; the draws do).
 */
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { hasRedisServer } from "../store/redis-helpers.js";
import {
  crashFailure,
  leakFailure,
  overshootFailure,
  rssFailure,
  stuckFailure,
  twiceFailure,
} from "./checks.js";
import { FAULT_KINDS, type FaultKind } from "./faults.js";
import { chaosSeed } from "./random.js";
import { type Receipt, receiptOf, receiptTable } from "./receipt.js";
import { runChaos } from "./session.js";

/**
 * Faults whose fix had not landed when this harness was committed, with why: their overshoot is
 * still measured and printed, and the assertion reports as `todo` instead of failing the suite.
 * Remove an entry when its fix lands.
 */
const NOT_FIXED_YET: Partial<Record<FaultKind, string>> = {};

const seed = chaosSeed();
const replay = `seed ${seed} (replay: CHAOS_SEED=${seed} npm test -- test/chaos)`;
const skip =
  !hasRedisServer() && process.env.CI !== "true"
    ? "no redis-server on the PATH: the chaos run starts its own"
    : false;

describe("chaos: replicas, Redis and the network fail at random under traffic", {
  skip,
  timeout: 240_000,
}, () => {
  let receipt: Receipt;

  before(
    async () => {
      const lines: string[] = [];
      const run = await runChaos({
        seed,
        replicas: 3,
        schedule: "each-once",
        traffic: { loops: 10, thinkMs: [50, 300], disconnectShare: 0.1, streamShare: 0.3 },
        gapMs: [200, 800],
        steadyMs: 12_000,
        rssEveryMs: 1000,
        log: (line) => lines.push(line),
      });
      for (const crash of run.crashes) process.stderr.write(`${crash}\n`);
      receipt = receiptOf(run);
      process.stderr.write(`${receiptTable(receipt)}\n`);
      if (receipt.causes.some((c) => c.violations.length > 0) || receipt.stuck.length > 0)
        process.stderr.write(
          `replica logs (tails):\n${run.logs.map((l, i) => `--- replica ${i}\n${l.slice(-3000)}`).join("\n")}\n`,
        );
    },
    { timeout: 200_000 },
  );

  test("with no fault in force, the pods never see more than a limit", () => {
    const steady = receipt.causes.find((c) => c.cause === "steady")!;
    assert.equal(overshootFailure(steady), undefined, `${overshootFailure(steady)}; ${replay}`);
  });

  for (const kind of FAULT_KINDS) {
    const todo = NOT_FIXED_YET[kind];
    test(`${kind}: never above a limit plus the fault's documented bound`, todo ? { todo } : {}, () => {
      const line = receipt.causes.find((c) => c.cause === kind)!;
      assert.equal(line.injected, 1, `${kind} injected once; ${replay}`);
      assert.equal(overshootFailure(line), undefined, `${overshootFailure(line)}; ${replay}`);
    });
  }

  test("no waiter waits past a heartbeat while the pods have room for it", () => {
    assert.equal(stuckFailure(receipt), undefined, `${stuckFailure(receipt)}; ${replay}`);
  });

  test("no call runs twice", () => {
    assert.equal(twiceFailure(receipt), undefined, `${twiceFailure(receipt)}; ${replay}`);
    assert.equal(receipt.unknownRuns, 0, "every run at a pod is a call the traffic sent");
  });

  test("no replica exits by itself", () => {
    assert.equal(crashFailure(receipt), undefined, `${crashFailure(receipt)}; ${replay}`);
  });

  test("after the traffic stops, nothing is counted in Redis or in any replica", () => {
    assert.equal(leakFailure(receipt), undefined, `${leakFailure(receipt)}; ${replay}`);
  });

  test("each replica's resident memory stays bounded", () => {
    assert.equal(rssFailure(receipt), undefined, `${rssFailure(receipt)}; ${replay}`);
  });

  test("the run did what it says: calls served and refused, every budget reached", () => {
    assert.ok((receipt.callsByEnd.ok ?? 0) > 100, `served ${receipt.callsByEnd.ok ?? 0} calls; ${replay}`);
    assert.ok(receipt.peaks.lane!.peak >= receipt.peaks.lane!.limit, `the lane reached its limit; ${replay}`);
  });
});
