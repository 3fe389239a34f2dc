/**
 * The interactive reserve of token and request buckets (issue 10, DESIGN §1.1) over random
 * interleavings on a ManualClock: one lane (limit 4, reserve 1: it keeps ¼ of its `tpm` and `rpm`
 * by default) in an account with its own `tpm` (keeping the lane's share too). Calls of random
 * class and estimate arrive, end with usage within their estimate, are aborted, time out and age
 * (aging 5 s, so bulk calls reach the interactive class while they wait).
 *
 * 1. At the instant of every grant of a call whose own class is not interactive, every bucket on
 *    its path still holds at least its reserve (aging never unlocks it).
 * 2. An interactive call may use it: no interactive waiter is left waiting whose estimate the
 *    buckets cover (reserve included) while its lane has a slot — not even behind an aged bulk
 *    call that is first in line — and across the runs interactive grants did take buckets below
 *    their reserve.
 * 3. Refusals say why truly: `exceeds_capacity` only when the estimate plus the reserve the call
 *    must leave is above a bucket's capacity.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { Governor, isRateLimitError, type Lease, type Snapshot } from "../../src/index.js";
import { ManualClock } from "../../src/testing.js";
import { flush } from "../helpers/index.js";
import { runs } from "./arbitraries.js";

const LANE = { limit: 4, reserve: 1, tpm: 4000, rpm: 20 }; // keeps 1000 tokens, 5 requests
const ACCOUNT_TPM = 8000; // keeps 2000 (the lane's share)
const TIMEOUT_MS = 20_000;
const PRIORITIES = ["interactive", "default", "bulk"] as const;

type Op =
  | { t: "acquire"; priority: (typeof PRIORITIES)[number]; tokens: number; usedShare: number }
  | { t: "end"; pick: number }
  | { t: "abort"; pick: number }
  | { t: "advance"; ms: number };

interface Call {
  priority: (typeof PRIORITIES)[number];
  tokens: number;
  used: number;
  arrivedAt: number;
  controller: AbortController;
  status: "waiting" | "held" | "done";
  lease?: Lease;
}

class ReserveModel {
  readonly clock = new ManualClock();
  readonly gov = new Governor({
    clock: this.clock,
    accounts: { acct: { tpm: ACCOUNT_TPM } },
    lanes: {
      L: { ...LANE, account: "acct", queueLimit: 50, queueTimeoutMs: TIMEOUT_MS, agingMs: 5000 },
    },
  });
  readonly calls: Call[] = [];
  readonly violations: string[] = [];
  /** Interactive grants that left a bucket below its reserve (the reserve was used). */
  reserveUsed = 0;
  readonly #stop: () => void;

  constructor() {
    const disposable = this.gov.onGrant((e) => this.#atGrant(e.priority));
    this.#stop = () => disposable[Symbol.dispose]();
  }

  dispose(): void {
    this.#stop();
    this.gov.close();
  }

  #buckets(s: Snapshot) {
    const lane = s.lanes[0]!;
    return [lane.tokens!, lane.requests!, s.accounts[0]!.tokens!];
  }

  /**
   * Check 1, at the instant of the grant (the buckets have just been taken). One unit of margin:
   * a refill timer lands where the level is the amount needed up to float rounding (1519.999…),
   * and the snapshot rounds down.
   */
  #atGrant(rank: number): void {
    for (const b of this.#buckets(this.gov.snapshot())) {
      if (rank !== 0 && b.available < b.reserve - 1)
        this.violations.push(
          `a class-${rank} grant left ${b.available} of ${b.per_minute} (reserve ${b.reserve})`,
        );
      if (rank === 0 && b.available < b.reserve - 1) this.reserveUsed++;
    }
  }

  async step(op: Op): Promise<void> {
    if (op.t === "acquire") this.#acquire(op);
    else if (op.t === "end") {
      const held = this.calls.filter((c) => c.status === "held");
      const c = held[op.pick % Math.max(1, held.length)];
      if (c !== undefined) {
        c.status = "done";
        c.lease!.succeeded({ tokens: c.used });
      }
    } else if (op.t === "abort") {
      const waiting = this.calls.filter((c) => c.status === "waiting");
      waiting[op.pick % Math.max(1, waiting.length)]?.controller.abort(new Error("abort"));
    } else this.clock.advance(op.ms);
    await flush();
    this.#checkInteractive();
  }

  #acquire(op: Extract<Op, { t: "acquire" }>): void {
    const call: Call = {
      priority: op.priority,
      tokens: op.tokens,
      used: Math.floor(op.tokens * op.usedShare),
      arrivedAt: this.clock.now(),
      controller: new AbortController(),
      status: "waiting",
    };
    this.calls.push(call);
    this.gov.acquire("L", { priority: op.priority, tokens: op.tokens, signal: call.controller.signal }).then(
      (lease) => {
        call.lease = lease;
        call.status = "held";
      },
      (error: unknown) => {
        call.status = "done";
        if (!isRateLimitError(error) || error.reason !== "exceeds_capacity") return;
        // Check 3: the estimate plus what the call must leave really is above a capacity.
        const floor = (reserve: number) => (op.priority === "interactive" ? 0 : reserve);
        const s = this.gov.snapshot();
        const fits = this.#buckets(s).every(
          (b, i) => (i === 1 ? 1 : op.tokens) + floor(b.reserve) <= b.per_minute,
        );
        if (fits)
          this.violations.push(`${op.priority} ${op.tokens} refused as never fitting: ${error.message}`);
      },
    );
  }

  /** Check 2: the first interactive waiter is granted once its lane has a slot and the buckets cover it. */
  #checkInteractive(): void {
    const head = this.calls.find(
      (c) => c.status === "waiting" && c.priority === "interactive" && !c.controller.signal.aborted,
    );
    if (head === undefined) return;
    const s = this.gov.snapshot();
    const lane = s.lanes[0]!;
    const [tokens, requests, account] = this.#buckets(s);
    // A margin of one unit: the snapshot's levels are rounded down.
    const covered =
      tokens!.available >= head.tokens + 1 &&
      account!.available >= head.tokens + 1 &&
      requests!.available >= 2;
    if (lane.inflight < lane.limit && covered)
      this.violations.push(
        `interactive ${head.tokens} waits at ${this.clock.now()} with room: ${JSON.stringify({ lane, account })}`,
      );
  }

  async drain(): Promise<void> {
    // An abort can let the next waiter through before its own abort: repeat until nothing is left.
    while (this.calls.some((c) => c.status !== "done")) {
      for (const c of this.calls) if (c.status === "waiting") c.controller.abort(new Error("drain"));
      for (const c of this.calls)
        if (c.status === "held") {
          c.status = "done";
          c.lease!.release();
        }
      await flush();
    }
    this.clock.advance(10 * 60_000);
    await flush();
    const lane = this.gov.snapshot().lanes[0]!;
    assert.deepEqual([lane.inflight, lane.queued, lane.tokens!.available], [0, 0, LANE.tpm]);
    assert.equal(this.clock.pendingTimers, 0, "no timer left armed");
  }
}

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant("acquire" as const),
      priority: fc.constantFrom(...PRIORITIES),
      // Mostly small, some near the lane's capacity less its reserve, a few above it.
      tokens: fc.oneof(
        { weight: 6, arbitrary: fc.integer({ min: 0, max: 800 }) },
        { weight: 3, arbitrary: fc.integer({ min: 800, max: 3200 }) },
        { weight: 1, arbitrary: fc.integer({ min: 3000, max: 4200 }) },
      ),
      usedShare: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("end" as const), pick: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("abort" as const), pick: fc.nat(20) }) },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant("advance" as const), ms: fc.integer({ min: 1, max: 8000 }) }),
  },
);

describe("rate budget invariants: the interactive reserve", () => {
  test("a non-interactive grant never leaves a bucket below its reserve; an interactive one may use it", async () => {
    let reserveUsed = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 80, size: "max" }), async (ops) => {
        const m = new ReserveModel();
        try {
          for (const op of ops) await m.step(op);
          assert.deepEqual(m.violations, [], m.violations.join("\n"));
          await m.drain();
          reserveUsed += m.reserveUsed;
        } finally {
          m.dispose();
        }
      }),
      runs(200),
    );
    // The generator must exercise what the checks are about.
    assert.ok(reserveUsed > 20, `interactive grants that used a reserve: ${reserveUsed}`);
  });
});
