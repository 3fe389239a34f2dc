/** fast-check generators for {@link Op} sequences and setups. */
import fc from "fast-check";
import { assertClean, checkOrder, checkStep, drainAndCheck } from "./invariants.js";
import type { Ending, Op, Setup } from "./model.js";
import { Model } from "./model.js";

/**
 * How leases end. Successes weigh `successWeight` against 1 for each other ending: on a pod lane
 * successes earn the re-dispatch budget (a tenth of a retry each), so a pod-heavy run needs
 * many of them before `retry()` is allowed at all.
 */
function endingArb(successWeight: number): fc.Arbitrary<Ending> {
  return fc.oneof(
    { weight: successWeight, arbitrary: fc.constant<Ending>("succeeded") },
    {
      weight: 6,
      arbitrary: fc.constantFrom<Ending>("release", "fail503", "refused", "error", "quota", "dispose"),
    },
  );
}

/**
 * Operations over `lanes` lanes; `retry` (weight `retryWeight` against 10 for endings) only when
 * some lane has pods.
 */
export function opArb(
  lanes: number,
  withRetry: boolean,
  successWeight = 1,
  retryWeight = 6,
): fc.Arbitrary<Op> {
  const ending = endingArb(successWeight);
  const ops: fc.WeightedArbitrary<Op>[] = [
    {
      weight: 16,
      arbitrary: fc.record({
        t: fc.constant("acquire" as const),
        lane: fc.nat(lanes - 1),
        pri: fc.constantFrom("interactive", "default", "bulk"),
        key: fc.constantFrom(undefined, undefined, "k1" as const, "k2" as const),
        abortable: fc.boolean(),
        noWait: fc.constantFrom(false, false, false, false, false, true),
      }),
    },
    { weight: 4, arbitrary: fc.record({ t: fc.constant("abort" as const), pick: fc.nat(20) }) },
    {
      weight: 10,
      arbitrary: fc.record({
        t: fc.constant("end" as const),
        pick: fc.nat(20),
        how: ending,
        twice: fc.option(ending, { nil: undefined, freq: 4 }),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant("again" as const),
        pick: fc.nat(20),
        how: fc.oneof(ending, fc.constant("retry" as const)),
      }),
    },
    {
      weight: 8,
      arbitrary: fc.record({
        t: fc.constant("advance" as const),
        // Mostly short steps (aging and cooldowns happen between arrivals), some past a timeout.
        ms: fc.oneof(
          { weight: 3, arbitrary: fc.integer({ min: 0, max: 120 }) },
          { weight: 1, arbitrary: fc.integer({ min: 0, max: 1500 }) },
        ),
      }),
    },
  ];
  if (withRetry)
    ops.push({
      weight: retryWeight,
      arbitrary: fc.record({
        t: fc.constant("retry" as const),
        pick: fc.nat(20),
        how: fc.constantFrom("refused" as const, "503" as const),
      }),
    });
  return fc.oneof(...ops);
}

/**
 * fc.assert parameters: `numRuns` scaled by `SLUICE_PROPERTY_SCALE` (e.g. 20 for a long bug hunt),
 * and shrinking cut off after 60 s so a failure on a long op sequence reports in bounded time.
 */
export function runs(numRuns: number): fc.Parameters<unknown> {
  const scale = Number(process.env.SLUICE_PROPERTY_SCALE ?? 1);
  return {
    numRuns: Math.max(1, Math.round(numRuns * (scale > 0 ? scale : 1))),
    plugins: [fc.interruptAfterTimeLimit(60_000 * Math.max(1, scale))],
  };
}

/** Runs `ops` on a fresh governor, checking every invariant after each step, then drains. */
export async function runOps(setup: Setup, ops: readonly Op[]): Promise<Model> {
  const m = new Model(setup);
  try {
    for (const [i, op] of ops.entries()) {
      await m.step(op);
      checkStep(m);
      checkOrder(m);
      assertClean(m, `after step ${i} ${JSON.stringify(op)} at t=${m.clock.now()}`);
    }
    await drainAndCheck(m);
    return m;
  } finally {
    m.dispose();
  }
}
