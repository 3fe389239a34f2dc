/**
 * Property tests for pods (DESIGN §1.3, §1.4): random sequences of grants, endings, re-dispatches
 * and clock moves against a Governor on a ManualClock, checking invariants after every step.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { Lease } from "../../src/core/lease.js";
import type { FailureInput } from "../../src/core/outcome.js";
import type { Governor } from "../../src/governor/governor.js";
import { flush } from "../helpers/index.js";
import { LANE, rig } from "./helpers.js";

type Ending = "success" | "503" | "refused" | "429" | "quota" | "timeout" | "release";
const ENDINGS: readonly Ending[] = ["success", "503", "refused", "429", "quota", "timeout", "release"];

const failure: Record<Exclude<Ending, "success" | "release">, FailureInput> = {
  "503": { status: 503 },
  refused: { refused: true },
  "429": { status: 429 },
  quota: { status: 429, retryAfterMs: 700 },
  timeout: Object.assign(new Error("timeout"), { code: "ETIMEDOUT" }),
};

type Op =
  | { t: "acquire"; n: number }
  | { t: "end"; i: number; ending: Ending }
  | { t: "retry"; i: number }
  | { t: "advance"; ms: number }
  | { t: "saturate"; pod: number };

/** Random ops; `advanceWeight` tunes how often time moves (breakers need it to cool down). */
const opsArb = (
  maxLength: number,
  advanceWeight = 2,
  endings: readonly Ending[] = ENDINGS,
): fc.Arbitrary<Op[]> =>
  fc.array(
    fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record({ t: fc.constant("acquire" as const), n: fc.integer({ min: 1, max: 6 }) }),
      },
      {
        weight: 5,
        arbitrary: fc.record({
          t: fc.constant("end" as const),
          i: fc.nat(),
          ending: fc.constantFrom(...endings),
        }),
      },
      { weight: 2, arbitrary: fc.record({ t: fc.constant("retry" as const), i: fc.nat() }) },
      {
        weight: advanceWeight,
        arbitrary: fc.record({ t: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 3_000 }) }),
      },
      { weight: 1, arbitrary: fc.record({ t: fc.constant("saturate" as const), pod: fc.nat({ max: 3 }) }) },
    ),
    { minLength: maxLength >> 1, maxLength },
  );

const fleetArb = fc.record({
  pods: fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 4 }),
  floor: fc.integer({ min: 1, max: 6 }),
  adaptive: fc.boolean(),
  failThreshold: fc.integer({ min: 1, max: 2 }),
});
type Fleet = typeof fleetArb extends fc.Arbitrary<infer F> ? F : never;

/** Holds the leases a random run has been granted and applies ops to them. */
class Harness {
  readonly held: Lease[] = [];
  constructor(readonly gov: Governor) {}

  #track(p: Promise<Lease>): void {
    p.then(
      (l) => this.held.push(l),
      () => {},
    );
  }

  async apply(op: Op, clock: { advance(ms: number): number }, decide?: (l: Lease, e: Ending) => Ending) {
    switch (op.t) {
      case "acquire":
        for (let k = 0; k < op.n; k++) this.#track(this.gov.acquire(LANE));
        break;
      case "end": {
        if (this.held.length === 0) break;
        const [lease] = this.held.splice(op.i % this.held.length, 1);
        const ending = decide ? decide(lease!, op.ending) : op.ending;
        if (ending === "success") lease!.succeeded();
        else if (ending === "release") lease!.release();
        else lease!.failed(failure[ending]);
        break;
      }
      case "retry": {
        if (this.held.length === 0) break;
        const [lease] = this.held.splice(op.i % this.held.length, 1);
        if (decide !== undefined && decide(lease!, "refused") === "success") {
          lease!.succeeded(); // this pod would not have refused
          break;
        }
        lease!.retry({ refused: true }).then(
          (ok) => {
            if (ok) this.held.push(lease!);
          },
          () => {},
        );
        break;
      }
      case "advance":
        clock.advance(op.ms);
        break;
      case "saturate":
        this.gov.reportSaturation(`p${op.pod}`);
        break;
    }
    await flush();
  }
}

function fleetRig(f: Fleet) {
  return rig({
    reserve: 0,
    queueTimeoutMs: 20_000,
    pods: f.pods.map((maxInflight, i) => ({ id: `p${i}`, maxInflight })),
    adaptive: f.adaptive ? { floor: f.floor } : false,
    breaker: { failThreshold: f.failThreshold, baseCooldownMs: 200, maxCooldownMs: 2_000 },
  });
}

describe("pod properties", () => {
  test("widths stay within [floor, ceiling] and no pod or lane is ever above its limit", async () => {
    await fc.assert(
      fc.asyncProperty(fleetArb, opsArb(60), async (fleet, ops) => {
        const r = fleetRig(fleet);
        const h = new Harness(r.gov);
        for (const op of ops) {
          await h.apply(op, r.clock);
          const snap = r.gov.snapshot();
          for (const p of snap.pods) {
            assert.ok(
              p.floor <= p.width && p.width <= p.ceiling,
              `${p.id}: width ${p.width} outside [${p.floor}, ${p.ceiling}]`,
            );
            assert.ok(p.inflight <= p.ceiling, `${p.id}: ${p.inflight} in flight above ceiling ${p.ceiling}`);
          }
          assert.ok(snap.lanes[0]!.inflight <= snap.lanes[0]!.limit);
        }
      }),
      { numRuns: 100 },
    );
  });

  test("one overloaded pod never lowers another pod's width", async () => {
    await fc.assert(
      fc.asyncProperty(
        fleetArb.filter((f) => f.pods.length >= 2),
        opsArb(60),
        async (fleet, ops) => {
          const r = fleetRig({ ...fleet, adaptive: true });
          const h = new Harness(r.gov);
          // Only p0 is overloaded: it refuses (or answers 503/429) whatever it is sent; the
          // others succeed or are released.
          const decide = (l: Lease, e: Ending): Ending =>
            l.pod === "p0"
              ? (["503", "refused", "429"] as const)[ENDINGS.indexOf(e) % 3]!
              : e === "release"
                ? e
                : "success";
          for (const op of ops) {
            if (op.t === "saturate") continue; // a direct congestion report on another pod is not p0's doing
            await h.apply(op, r.clock, decide);
            for (const p of r.gov.snapshot().pods.slice(1))
              assert.equal(p.width, p.ceiling, `${p.id} was narrowed`);
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  test("a half-open pod gets exactly one dispatch until that probe resolves", async () => {
    const halfOpenRuns = new Set<Fleet>();
    const probedRuns = new Set<Fleet>();
    await fc.assert(
      fc.asyncProperty(
        fleetArb.map((f) => ({ ...f, failThreshold: 1 })),
        opsArb(100, 5, [...ENDINGS, "503", "503", "refused", "success"]),
        async (fleet, ops) => {
          const r = fleetRig(fleet);
          const h = new Harness(r.gov);
          /** Last seen dispatch of each held lease ("pod#attempt"). */
          let seen = new Map<Lease, string>();
          /** Leases dispatched to a pod while it was half-open and still held. */
          const probes = new Map<string, Set<Lease>>();
          r.gov.onBreakerChange((e) => {
            if (e.to === "half_open") {
              probes.set(e.pod, new Set());
              halfOpenRuns.add(fleet);
            } else probes.delete(e.pod);
          });
          for (const op of ops) {
            await h.apply(op, r.clock);
            const now = new Map<Lease, string>();
            for (const l of h.held) now.set(l, `${l.pod}#${l.attempts}`);
            for (const [pod, set] of probes) {
              for (const l of set) if (now.get(l) !== seen.get(l) || !now.has(l)) set.delete(l); // ended or moved
              for (const l of h.held) if (l.pod === pod && seen.get(l) !== now.get(l)) set.add(l); // dispatched during this op
              assert.ok(set.size <= 1, `${set.size} calls dispatched to half-open ${pod}`);
              if (set.size === 1) probedRuns.add(fleet);
            }
            seen = now;
          }
        },
      ),
      { numRuns: 200 },
    );
    assert.ok(probedRuns.size >= 20, `only ${probedRuns.size} of ${halfOpenRuns.size} half-open runs probed`);
  });
});
