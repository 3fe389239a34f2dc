/**
 * The DESIGN §1 invariants for rate budgets (issue 10), over random interleavings on a
 * ManualClock: two lanes of one account, lane A with its own `tpm`, the account with `tpm`, `rpm`
 * and an in-flight cap. Calls carry random estimates; each ends as planned at its acquire
 * (succeeded with its real usage, released, failed, never sent), or is aborted, or times out.
 *
 * After every step:
 * 1. no bucket is overdrawn by a grant: at the instant of each grant every bucket on its path
 *    still holds ≥ 0 (debt comes only from usage reported beyond the estimate);
 * 2. the provider never sees more than its limits: a mirror of the provider — token buckets of
 *    the same rates charging each call's real usage at its grant, one request per call sent —
 *    never goes below zero while usage stays within the estimates, whenever reconciles happen;
 * 3. no lost wake-up: no waiter is left that a pass would grant now (FIFO within a lane; across
 *    lanes the earliest arrival whose path has room, unless an earlier waiter is held up by a
 *    bucket both share);
 * 4. refusals say why truly: `exceeds_capacity` only for an estimate above a bucket's capacity;
 * 5. no residue: after aborting and ending everything and a long advance, nothing is in flight
 *    or queued, every bucket is full again, every promise settled and no timer armed.
 */
import assert from "node:assert/strict";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  Governor,
  isQueueFullError,
  isQueueTimeoutError,
  isRateLimitError,
  type Lease,
  type Snapshot,
} from "../../src/index.js";
import { ManualClock } from "../../src/testing.js";
import { flush } from "../helpers/index.js";
import { runs } from "./arbitraries.js";

const MIN = 60_000;
const LANES = { A: { limit: 3, tpm: 3000 }, B: { limit: 2 } } as const;
const ACCOUNT = { maxInflight: 4, tpm: 6000, rpm: 20 };
const TIMEOUT_MS = 20_000;

type LaneName = keyof typeof LANES;
type Ending = "succeeded" | "release" | "fail503" | "notSent" | "refused";
type Op =
  | { t: "acquire"; lane: LaneName; tokens: number; used: number; ending: Ending; abortable: boolean }
  | { t: "end"; pick: number }
  | { t: "abort"; pick: number }
  | { t: "advance"; ms: number };

interface Call {
  id: number;
  lane: LaneName;
  tokens: number;
  used: number;
  ending: Ending;
  arrivedAt: number;
  controller: AbortController | undefined;
  status: "waiting" | "held" | "ended" | "refused" | "aborted" | "timedout";
  lease: Lease | undefined;
  settled: boolean;
}

/** The provider's own meter: a token bucket of the same rate, charging what it really served. */
class ProviderBucket {
  level: number;
  at = 0;
  constructor(readonly perMinute: number) {
    this.level = perMinute;
  }
  charge(n: number, now: number): number {
    this.level = Math.min(this.perMinute, this.level + ((now - this.at) * this.perMinute) / MIN) - n;
    this.at = now;
    return this.level;
  }
}

class RateModel {
  readonly clock = new ManualClock();
  readonly gov = new Governor({
    clock: this.clock,
    accounts: { acct: ACCOUNT },
    lanes: {
      A: { ...LANES.A, reserve: 0, account: "acct", queueLimit: 50, queueTimeoutMs: TIMEOUT_MS },
      B: { ...LANES.B, reserve: 0, account: "acct", queueLimit: 50, queueTimeoutMs: TIMEOUT_MS },
    },
  });
  readonly calls: Call[] = [];
  readonly violations: string[] = [];
  readonly provider = {
    acctTokens: new ProviderBucket(ACCOUNT.tpm),
    acctRequests: new ProviderBucket(ACCOUNT.rpm),
    laneA: new ProviderBucket(LANES.A.tpm),
  };
  readonly stats = { grants: 0, waitsGranted: 0, rateRefusals: 0, timeouts: 0 };

  readonly #onGrant = () => this.#checkLevels("at a grant");

  constructor(readonly overuse: boolean) {
    subscribe("sluice:lease:grant", this.#onGrant);
  }

  dispose(): void {
    unsubscribe("sluice:lease:grant", this.#onGrant);
  }

  snapshot(): Snapshot {
    return this.gov.snapshot();
  }

  async step(op: Op): Promise<void> {
    switch (op.t) {
      case "acquire":
        this.#acquire(op);
        break;
      case "end": {
        const held = this.calls.filter((c) => c.status === "held");
        const call = held[op.pick % Math.max(1, held.length)];
        if (call !== undefined) {
          call.status = "ended";
          end(call.lease!, call);
        }
        break;
      }
      case "abort": {
        const waiting = this.calls.filter((c) => c.status === "waiting" && c.controller !== undefined);
        waiting[op.pick % Math.max(1, waiting.length)]?.controller?.abort(new Error("abort"));
        break;
      }
      case "advance":
        this.clock.advance(op.ms);
        break;
    }
    await flush();
    this.#chargeProvider();
    this.#checkLevels("after the step");
    this.check();
  }

  #acquire(op: Extract<Op, { t: "acquire" }>): void {
    const controller = op.abortable ? new AbortController() : undefined;
    const call: Call = {
      id: this.calls.length,
      lane: op.lane,
      tokens: op.tokens,
      used: op.used,
      ending: op.ending,
      arrivedAt: this.clock.now(),
      controller,
      status: "waiting",
      lease: undefined,
      settled: false,
    };
    this.calls.push(call);
    this.gov.acquire(op.lane, { tokens: op.tokens, signal: controller?.signal }).then(
      (lease) => {
        call.settled = true;
        call.lease = lease;
        call.status = "held";
        this.#granted.push(call);
        if (lease.queuedMs > 0) this.stats.waitsGranted++;
        this.stats.grants++;
      },
      (error: unknown) => {
        call.settled = true;
        if (controller?.signal.aborted) call.status = "aborted";
        else if (isQueueTimeoutError(error)) {
          call.status = "timedout";
          this.stats.timeouts++;
        } else if (isRateLimitError(error)) {
          call.status = "refused";
          this.stats.rateRefusals++;
          const capacity = Math.min(ACCOUNT.tpm, op.lane === "A" ? LANES.A.tpm : ACCOUNT.tpm);
          if (error.reason === "exceeds_capacity" && op.tokens <= capacity)
            this.violations.push(
              `#${call.id}: ${op.tokens} tokens refused as above a capacity of ${capacity}`,
            );
          if (error.reason === "cannot_cover_in_time" && error.retryAfterMs < TIMEOUT_MS)
            this.violations.push(
              `#${call.id}: refused cannot_cover_in_time with a refill of ${error.retryAfterMs} ms`,
            );
        } else if (isQueueFullError(error)) call.status = "refused";
        else {
          call.status = "refused";
          this.violations.push(`#${call.id} rejected with ${String(error)}`);
        }
      },
    );
  }

  readonly #granted: Call[] = [];

  /**
   * Check 1 (the grant channel calls it at the instant of each grant): with usage within the
   * estimates only a grant takes from a bucket, and it takes only what is there.
   */
  #checkLevels(when: string): void {
    if (this.overuse) return;
    const s = this.snapshot();
    const acct = s.accounts[0]!;
    for (const b of [acct.tokens!, acct.requests!, s.lanes.find((l) => l.lane === "A")!.tokens!])
      if (b.available < -1)
        this.violations.push(
          `${when} at ${this.clock.now()}: a bucket left at ${b.available} (${JSON.stringify(b)})`,
        );
  }

  /** Check 2: the provider charges each call sent its real usage at its grant, in time order. */
  #chargeProvider(): void {
    const grants = this.#granted.splice(0).sort((a, b) => grantTime(a) - grantTime(b));
    for (const c of grants) {
      const at = grantTime(c);
      const sent = c.ending !== "notSent" && c.ending !== "refused";
      const charged = [this.provider.acctTokens.charge(sent ? c.used : 0, at)];
      charged.push(this.provider.acctRequests.charge(sent ? 1 : 0, at));
      if (c.lane === "A") charged.push(this.provider.laneA.charge(sent ? c.used : 0, at));
      if (!this.overuse && charged.some((level) => level < -1e-6))
        this.violations.push(`the provider was overdrawn by #${c.id} at ${at}: ${charged.join(", ")}`);
    }
  }

  /** Check 3: no waiter a pass would grant now. */
  check(): void {
    const s = this.snapshot();
    const now = this.clock.now();
    const acct = s.accounts[0]!;
    const laneOf = (name: string) => s.lanes.find((l) => l.lane === name)!;
    const waiting = this.calls.filter((c) => c.status === "waiting" && !c.controller?.signal.aborted);
    for (const name of ["A", "B"] as const)
      if (laneOf(name).queued !== waiting.filter((c) => c.lane === name).length)
        this.violations.push(`lane ${name}: snapshot queued ${laneOf(name).queued}, model ${waiting.length}`);
    const heads = (["A", "B"] as const)
      .map((name) => waiting.find((c) => c.lane === name))
      .filter((c): c is Call => c !== undefined)
      .sort((a, b) => a.arrivedAt - b.arrivedAt || a.id - b.id);
    // Room with a margin of one token: the snapshot's levels are rounded down.
    const tokensFor = (c: Call) =>
      acct.tokens!.available >= c.tokens + 1 &&
      (c.lane === "B" || laneOf("A").tokens!.available >= c.tokens + 1);
    const room = (c: Call) =>
      laneOf(c.lane).inflight < laneOf(c.lane).limit &&
      acct.inflight < acct.adaptive_cap! &&
      acct.requests!.available >= 2 &&
      tokensFor(c);
    for (const [i, h] of heads.entries()) {
      if (!room(h)) continue;
      // An earlier head held up by a bucket both share keeps it: the account's buckets always.
      const earlier = heads.slice(0, i);
      if (earlier.some((e) => !tokensFor(e) || acct.requests!.available < 2)) continue;
      this.violations.push(
        `lost wake-up at ${now}: #${h.id} (${h.lane}, ${h.tokens} tokens) waits with room: ${JSON.stringify({ acct, A: laneOf("A"), B: laneOf("B") })}`,
      );
    }
  }

  /** Check 5. */
  async drain(): Promise<void> {
    for (let round = 0; round < 20; round++) {
      for (const c of this.calls) if (c.status === "waiting") c.controller?.abort(new Error("drain"));
      await flush();
      while (this.calls.some((c) => c.status === "held")) await this.step({ t: "end", pick: 0 });
      if (!this.calls.some((c) => c.status === "waiting" || c.status === "held")) break;
      await this.step({ t: "advance", ms: TIMEOUT_MS + 1 });
    }
    await this.step({ t: "advance", ms: 20 * MIN });
    const s = this.snapshot();
    const acct = s.accounts[0]!;
    assert.deepEqual(
      s.lanes.map((l) => [l.lane, l.inflight, l.queued]),
      [
        ["A", 0, 0],
        ["B", 0, 0],
      ],
    );
    assert.equal(acct.inflight, 0);
    assert.equal(acct.tokens!.available, ACCOUNT.tpm, "the account's token bucket is full again");
    assert.equal(acct.requests!.available, ACCOUNT.rpm);
    assert.equal(s.lanes[0]!.tokens!.available, LANES.A.tpm);
    assert.deepEqual(
      this.calls.filter((c) => !c.settled).map((c) => c.id),
      [],
    );
    assert.equal(this.clock.pendingTimers, 0, "no timer left armed");
  }
}

function grantTime(c: Call): number {
  return c.arrivedAt + c.lease!.queuedMs;
}

function end(lease: Lease, call: Call): void {
  switch (call.ending) {
    case "succeeded":
      lease.succeeded({ tokens: call.used });
      return;
    case "release":
      lease.release();
      return;
    case "fail503":
      lease.failed({ status: 503 });
      return;
    case "notSent":
      lease.release({ sent: false });
      return;
    case "refused":
      lease.failed({ refused: true });
      return;
  }
}

const LONG_HELD_REFUND: Op[] = [
  { t: "acquire", lane: "A", tokens: 3000, used: 0, ending: "succeeded", abortable: false },
  { t: "advance", ms: 25_000 },
  { t: "advance", ms: 25_000 },
  { t: "advance", ms: 25_000 },
  { t: "acquire", lane: "A", tokens: 3000, used: 3000, ending: "succeeded", abortable: false },
  { t: "end", pick: 0 },
  { t: "acquire", lane: "A", tokens: 3000, used: 3000, ending: "succeeded", abortable: false },
];

function opArb(overuse: boolean): fc.Arbitrary<Op> {
  const acquire = fc
    .record({
      lane: fc.constantFrom<LaneName>("A", "B"),
      // Mostly small, some large, a few above a capacity (refused at once).
      tokens: fc.oneof(
        { weight: 6, arbitrary: fc.integer({ min: 0, max: 600 }) },
        { weight: 3, arbitrary: fc.integer({ min: 600, max: 3000 }) },
        { weight: 1, arbitrary: fc.integer({ min: 3000, max: 7000 }) },
      ),
      usedShare: fc.double({ min: 0, max: overuse ? 2 : 1, noNaN: true }),
      ending: fc.constantFrom<Ending>(
        "succeeded",
        "succeeded",
        "succeeded",
        "release",
        "fail503",
        "notSent",
        "refused",
      ),
      abortable: fc.boolean(),
    })
    .map(({ usedShare, ...r }) => ({ t: "acquire" as const, ...r, used: Math.floor(r.tokens * usedShare) }));
  return fc.oneof(
    { weight: 10, arbitrary: acquire },
    { weight: 7, arbitrary: fc.record({ t: fc.constant("end" as const), pick: fc.nat(20) }) },
    { weight: 2, arbitrary: fc.record({ t: fc.constant("abort" as const), pick: fc.nat(20) }) },
    {
      weight: 6,
      arbitrary: fc.record({
        t: fc.constant("advance" as const),
        ms: fc.oneof(fc.integer({ min: 0, max: 2000 }), fc.integer({ min: 0, max: 25_000 })),
      }),
    },
  );
}

async function run(ops: readonly Op[], overuse: boolean): Promise<RateModel> {
  const m = new RateModel(overuse);
  try {
    for (const [i, op] of ops.entries()) {
      await m.step(op);
      if (m.violations.length > 0)
        assert.fail(
          `after step ${i} ${JSON.stringify(op)} at ${m.clock.now()}:\n  ${m.violations.join("\n  ")}`,
        );
    }
    await m.drain();
    if (m.violations.length > 0) assert.fail(`drain:\n  ${m.violations.join("\n  ")}`);
    return m;
  } finally {
    m.dispose();
  }
}

describe("rate budget invariants: two lanes of one account", () => {
  test("no bucket overdrawn at a grant, the provider never over its limits, no lost wake-up, no residue", async () => {
    const totals = { grants: 0, waitsGranted: 0, rateRefusals: 0, timeouts: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(opArb(false), { minLength: 1, maxLength: 80, size: "max" }), async (ops) => {
        const m = await run(ops, false);
        for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += m.stats[k];
      }),
      {
        ...runs(300),
        // A reservation held across a refill and then refunded (found by hand; random runs reach
        // it rarely): refunding it in full would let the provider's next minute spend it twice.
        examples: [[LONG_HELD_REFUND]],
      },
    );
    // The generators must exercise what the checks are about.
    assert.ok(totals.waitsGranted > 50, `waiters granted after a wait: ${totals.waitsGranted}`);
    assert.ok(totals.rateRefusals > 20, `rate refusals: ${totals.rateRefusals}`);
    assert.ok(totals.timeouts > 5, `timeouts: ${totals.timeouts}`);
  });

  test("with usage beyond the estimates (debt): no lost wake-up and no residue", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb(true), { minLength: 1, maxLength: 80, size: "max" }), async (ops) => {
        await run(ops, true);
      }),
      runs(100),
    );
  });
});
