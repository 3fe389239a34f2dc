/**
 * Issue 14 under a manual clock: no lost wake-up when the governor's timer fires up to 1 ms early
 * or late and time passes between two readings of the clock, as it does with real timers.
 *
 * The other property suites' ManualClock fires a timer exactly at its time, never moves between
 * two reads in one synchronous step, and their jitter-free breakers end cooldowns on whole
 * milliseconds; real timers give none of that, which is why issue 14 showed only with them.
 * Here the clock reads whole milliseconds of a fractional time (like `systemClock`), each read
 * lets a little time pass, and each timer fires at its time plus an offset in [−1, +1] ms;
 * breaker cooldowns carry their ±20 % fractional jitter and quota resets are fractional.
 * fast-check picks all of it. Before the fix (a pass and the re-arm at two clock readings) this
 * fails within a few dozen runs: a timer fires just before a cooldown's end, the pass misses it,
 * the next reading is past it, and only the queue deadline is armed.
 *
 * Checked after every step: (a) a lane that has a waiter, room, and a pod free of any breaker
 * cooldown or pause grants within 3 ms of clock (0.5 ms for the snapshot's rounding, 1 ms for a
 * late timer, a whole-ms read); (b) no call waits 3 ms past its queue timeout. After the run,
 * everything released or timed out: no residue and no timer left armed.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { Clock } from "../../src/core/clock.js";
import { Governor, isQueueTimeoutError, type Lease, type Snapshot } from "../../src/index.js";
import { flush } from "../helpers/index.js";
import { runs } from "./arbitraries.js";
import { podFree } from "./model.js";

/** A timer that fired early is never due again before this much time has passed (libuv's 1 ms tick). */
const MIN_GAP_MS = 0.25;
/** Slack of check (a): snapshot rounding (0.5) + a late timer (1) + a whole-ms read (1), rounded up. */
const SLACK_MS = 3;

interface Timer {
  fireAt: number;
  fn: () => void;
  seq: number;
}

/**
 * A manual clock that behaves like real timers: reads are whole milliseconds of a fractional
 * time, every read lets `drifts[i]` ms pass (code takes time), and a timer fires at its time
 * plus `offsets[i]` ms — but never at the instant it was armed, so a timer that keeps firing
 * early still lets time move on.
 */
class EarlyLateClock implements Clock {
  #t = 0;
  #timers: Timer[] = [];
  #seq = 0;
  #reads = 0;
  #armed = 0;
  /** Every timer due at or before this time has fired. */
  firedThrough = 0;

  constructor(
    readonly offsets: readonly number[],
    readonly drifts: readonly number[],
  ) {}

  now(): number {
    const n = Math.floor(this.#t);
    this.#t += this.drifts[this.#reads++ % this.drifts.length]!;
    return n;
  }

  setTimer(atMs: number, fn: () => void): () => void {
    const offset = this.offsets[this.#armed++ % this.offsets.length]!;
    const timer: Timer = { fireAt: Math.max(atMs + offset, this.#t + MIN_GAP_MS), fn, seq: this.#seq++ };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  get pendingTimers(): number {
    return this.#timers.length;
  }

  /** Moves time forward by `ms`, firing due timers on the way in their order. */
  advance(ms: number): void {
    const target = this.#t + ms;
    for (;;) {
      let next: Timer | undefined;
      for (const t of this.#timers)
        if (
          t.fireAt <= target &&
          (next === undefined || t.fireAt < next.fireAt || (t.fireAt === next.fireAt && t.seq < next.seq))
        )
          next = t;
      if (next === undefined) break;
      this.#timers = this.#timers.filter((t) => t !== next);
      if (next.fireAt > this.#t) this.#t = next.fireAt;
      next.fn();
    }
    if (target > this.#t) this.#t = target;
    this.firedThrough = target;
  }
}

type Ending = "succeeded" | "release" | "503" | "quota";
type Op =
  | { t: "acquire"; abortable: boolean }
  | { t: "end"; pick: number; how: Ending; resetMs: number }
  | { t: "abort"; pick: number }
  | { t: "advance"; ms: number };

interface Setup {
  pods: number[];
  limit: number;
  queueTimeoutMs: number;
  baseCooldownMs: number;
  randoms: number[];
  offsets: number[];
  drifts: number[];
}

interface Call {
  arrivedAt: number;
  status: "waiting" | "held" | "ended" | "refused";
  lease?: Lease;
  abort?: AbortController;
}

const MAX_COOLDOWN_MS = 800;

const setupArb: fc.Arbitrary<Setup> = fc.record({
  pods: fc.array(fc.integer({ min: 1, max: 2 }), { minLength: 1, maxLength: 2 }),
  limit: fc.integer({ min: 1, max: 4 }),
  queueTimeoutMs: fc.integer({ min: 300, max: 2000 }),
  baseCooldownMs: fc.integer({ min: 2, max: 200 }),
  randoms: fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1 }),
  offsets: fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 1 }),
  drifts: fc.array(fc.constantFrom(0, 0, 0.1, 0.4, 0.9), { minLength: 1 }),
});

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ t: fc.constant("acquire" as const), abortable: fc.boolean() }) },
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant("end" as const),
      pick: fc.nat(8),
      how: fc.constantFrom<Ending>("succeeded", "release", "503", "503", "quota", "quota"),
      // Fractional resets, some shorter than a millisecond.
      resetMs: fc.oneof(
        fc.double({ min: 0, max: 2, noNaN: true }),
        fc.double({ min: 2, max: 300, noNaN: true }),
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("abort" as const), pick: fc.nat(8) }) },
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant("advance" as const),
      ms: fc.oneof(fc.double({ min: 0, max: 5, noNaN: true }), fc.double({ min: 0, max: 400, noNaN: true })),
    }),
  },
);

class Run {
  readonly clock: EarlyLateClock;
  readonly gov: Governor;
  readonly calls: Call[] = [];
  /** Grants and queue timeouts so far: either shows the scheduler woke up. */
  wakeUps = 0;

  constructor(readonly setup: Setup) {
    this.clock = new EarlyLateClock(setup.offsets, setup.drifts);
    let r = 0;
    this.gov = new Governor({
      clock: this.clock,
      // The breakers' ±20 % jitter, so cooldowns end on fractional milliseconds.
      random: () => setup.randoms[r++ % setup.randoms.length]!,
      lanes: {
        L: {
          limit: setup.limit,
          reserve: 0,
          queueLimit: 16,
          queueTimeoutMs: setup.queueTimeoutMs,
          adaptive: false,
          breaker: {
            failThreshold: 1,
            baseCooldownMs: setup.baseCooldownMs,
            backoffFactor: 2,
            maxCooldownMs: MAX_COOLDOWN_MS,
          },
          pods: setup.pods.map((maxInflight, i) => ({ id: `p${i}`, maxInflight })),
        },
      },
    });
    this.gov.onGrant(() => this.wakeUps++);
    this.gov.onRefusal((e) => {
      if (isQueueTimeoutError(e.error)) this.wakeUps++;
    });
  }

  async step(op: Op): Promise<void> {
    switch (op.t) {
      case "acquire": {
        const call: Call = { arrivedAt: this.clock.now(), status: "waiting" };
        if (op.abortable) call.abort = new AbortController();
        this.calls.push(call);
        this.gov.acquire("L", { signal: call.abort?.signal }).then(
          (lease) => {
            call.lease = lease;
            call.status = "held";
          },
          () => {
            call.status = "refused";
          },
        );
        break;
      }
      case "end": {
        const held = this.calls.filter((c) => c.status === "held");
        const call = held[op.pick % Math.max(1, held.length)];
        if (call === undefined) break;
        call.status = "ended";
        if (op.how === "succeeded") call.lease!.succeeded();
        else if (op.how === "release") call.lease!.release();
        else if (op.how === "503") call.lease!.failed({ status: 503 });
        else call.lease!.failed({ status: 429, retryAfterMs: op.resetMs });
        break;
      }
      case "abort": {
        const waiting = this.calls.filter((c) => c.status === "waiting" && c.abort !== undefined);
        waiting[op.pick % Math.max(1, waiting.length)]?.abort?.abort(new Error("aborted by the test"));
        break;
      }
      case "advance":
        this.clock.advance(op.ms);
        break;
    }
    await flush();
  }

  /** Check (a): a lane that could grant now does so within the slack. */
  async checkNoLostWakeUp(where: string): Promise<void> {
    const before = this.gov.snapshot();
    if (!grantable(before)) return;
    const wakeUps = this.wakeUps;
    this.clock.advance(SLACK_MS);
    await flush();
    if (this.wakeUps === wakeUps)
      assert.fail(
        `${where}: lost wake-up, lane ${JSON.stringify(before.lanes[0])} with pods ` +
          `${JSON.stringify(before.pods)} granted nothing within ${SLACK_MS} ms ` +
          `(${this.clock.pendingTimers} timers armed)`,
      );
  }

  /** Check (b): no call waits past its queue timeout (with the same slack). */
  checkDeadlines(where: string): void {
    for (const c of this.calls)
      if (
        c.status === "waiting" &&
        this.clock.firedThrough >= c.arrivedAt + this.setup.queueTimeoutMs + SLACK_MS
      )
        assert.fail(
          `${where}: a call that arrived at ${c.arrivedAt} still waits at ${this.clock.firedThrough}`,
        );
  }

  /** Releases everything and lets the rest time out; then nothing is left behind. */
  async drain(): Promise<void> {
    for (let round = 0; round < 20; round++) {
      for (const c of this.calls.filter((x) => x.status === "held")) {
        c.status = "ended";
        c.lease!.release();
      }
      await flush();
      if (!this.calls.some((c) => c.status === "waiting" || c.status === "held")) break;
      this.clock.advance(this.setup.queueTimeoutMs + MAX_COOLDOWN_MS + SLACK_MS);
      await flush();
    }
    const s = this.gov.snapshot();
    assert.deepEqual([s.lanes[0]!.inflight, s.lanes[0]!.queued], [0, 0], "lane residue");
    for (const p of s.pods) assert.equal(p.inflight, 0, `pod ${p.id} residue`);
    assert.deepEqual(
      this.calls.filter((c) => c.status === "waiting" || c.status === "held").length,
      0,
      "every acquire settled and every lease ended",
    );
    assert.equal(this.clock.pendingTimers, 0, "no timer left armed");
  }
}

/** The lane has a waiter, room, and a pod whose cooldown and pause have ended (within 0.5 ms). */
function grantable(s: Snapshot): boolean {
  const lane = s.lanes[0]!;
  return lane.queued > 0 && lane.inflight < lane.limit && s.pods.some(podFree);
}

describe("scheduler invariants: timers that fire early or late", () => {
  test("no lost wake-up at a cooldown's end, a pause's end or a queue deadline, and no residue", async () => {
    await fc.assert(
      fc.asyncProperty(
        setupArb,
        fc.array(opArb, { minLength: 1, maxLength: 60, size: "max" }),
        async (setup, ops) => {
          const run = new Run(setup);
          try {
            for (const [i, op] of ops.entries()) {
              await run.step(op);
              const where = `after step ${i} ${JSON.stringify(op)}`;
              run.checkDeadlines(where);
              await run.checkNoLostWakeUp(where);
            }
            await run.drain();
          } finally {
            run.gov.close();
          }
        },
      ),
      { ...runs(300), includeErrorInReport: true },
    );
  });
});
