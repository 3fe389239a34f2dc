/**
 * Issue 14, with real timers (the default `systemClock`): a caller behind a re-opened breaker or
 * a quota pause was, in about 1 run of 100, never granted and waited out its whole queue timeout.
 *
 * The governor's one timer fired at the cooldown's end, ran a pass at one clock reading and
 * computed the next wake-up at a second. Node runs timers on libuv's cached whole-millisecond
 * loop time, so the timer could fire a fraction of a millisecond before `performance.now()`
 * reached the (fractional, jittered) cooldown end: the pass, at the whole millisecond before the
 * end, found the pod still cooling; by the second reading the end had passed, so `nextWakeAt`
 * no longer named it and only the queue deadline was armed. Nothing else arrived to wake the
 * scheduler. Fixed in the governor (one reading per wake-up) and in `systemClock` (a timer
 * fires only once `now()` has reached its time).
 *
 * Each cycle runs on its own Governor; the cycles run side by side, so the whole test takes about
 * a second when every waiter is granted at its cooldown's end. A lost wake-up shows as a queue
 * timeout, which is far beyond any cooldown or pause here.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Governor, type Lease } from "../../src/index.js";

const CYCLES = 500;
/** Only a lost wake-up waits this long: cooldowns end within 360 ms, pauses within 108 ms. */
const QUEUE_TIMEOUT_MS = 5000;

function onePodLane(
  maxInflight: number,
  breaker?: { failThreshold: number; baseCooldownMs: number; backoffFactor: number },
) {
  return new Governor({
    lanes: {
      L: {
        limit: 4,
        queueTimeoutMs: QUEUE_TIMEOUT_MS,
        adaptive: false,
        ...(breaker === undefined ? {} : { breaker }),
        pods: [{ id: "p", maxInflight }],
      },
    },
  });
}

/** Waits for a lease on `gov`; on a refusal returns what the pod looked like then. */
async function waitForGrant(gov: Governor, cycle: number): Promise<string | null> {
  let lease: Lease;
  try {
    lease = await gov.acquire("L");
  } catch (error) {
    return `cycle ${cycle}: ${(error as Error).name}, pod ${JSON.stringify(gov.snapshot().pods[0])}`;
  }
  lease.succeeded();
  return null;
}

/** The steps 1–3: open, fail the half-open probe (re-open, 300 ms ± 20 %), then wait. */
async function reopenedBreakerCycle(cycle: number): Promise<string | null> {
  const gov = onePodLane(4, { failThreshold: 1, baseCooldownMs: 150, backoffFactor: 2 });
  try {
    (await gov.acquire("L")).failed({ status: 503 });
    await sleep(200);
    const probe = await gov.acquire("L");
    probe.failed({ status: 503 });
    await sleep(150 + (cycle % 101));
    return await waitForGrant(gov, cycle);
  } finally {
    gov.close();
  }
}

/**
 * A call waits behind a busy pod, whose call then fails with a 429 and a 100–108 ms reset: the
 * pod is free but paused, and the waiter is granted when the pause ends. (A call that arrives
 * while every pod is paused is refused at once with QuotaPausedError, so it waits first.)
 */
async function quotaPauseCycle(cycle: number): Promise<string | null> {
  const gov = onePodLane(1);
  try {
    const busy = await gov.acquire("L");
    const waiter = waitForGrant(gov, cycle);
    await sleep(cycle % 51);
    busy.failed({ status: 429, retryAfterMs: 100 + (cycle % 9) });
    return await waiter;
  } finally {
    gov.close();
  }
}

async function lostWakeUps(cycle: (i: number) => Promise<string | null>): Promise<string[]> {
  const outcomes = await Promise.all(Array.from({ length: CYCLES }, (_, i) => cycle(i)));
  return outcomes.filter((o) => o !== null);
}

describe("regress: no lost wake-up at a cooldown's or a pause's end (real timers)", () => {
  test(`a caller behind a re-opened breaker is granted when the cooldown ends (${CYCLES} cycles)`, async () => {
    assert.deepEqual(await lostWakeUps(reopenedBreakerCycle), []);
  });

  test(`a caller behind a quota pause is granted when the pause ends (${CYCLES} cycles)`, async () => {
    assert.deepEqual(await lostWakeUps(quotaPauseCycle), []);
  });
});
