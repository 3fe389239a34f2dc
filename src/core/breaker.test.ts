/**
 * The breaker as a unit: its state is the whole truth (the closed count included), and it
 * round-trips through JSON: a breaker saved and restored at any point answers every later call
 * exactly as one that was never saved (the property the shared store relies on).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { Mulberry32 } from "../sim/random.js";
import { Breaker, type BreakerOptions, type BreakerState } from "./breaker.js";

describe("Breaker state", () => {
  test("closed.consecutive carries the real run of overload signals, and a success resets it", () => {
    const b = new Breaker({ failThreshold: 3 });
    assert.deepEqual(b.toJSON(), { kind: "closed", consecutive: 0 });
    b.onFailure(0, false);
    b.onFailure(0, false);
    assert.deepEqual(b.toJSON(), { kind: "closed", consecutive: 2 });
    b.onSuccess(false);
    assert.deepEqual(b.toJSON(), { kind: "closed", consecutive: 0 });
  });

  test("a breaker restored two failures into a threshold of 3 opens on the third", () => {
    const saved = new Breaker({ failThreshold: 3 }, () => 0.5);
    saved.onFailure(0, false);
    saved.onFailure(0, false);
    const restored = Breaker.fromJSON(
      JSON.parse(JSON.stringify(saved.toJSON())),
      { failThreshold: 3 },
      () => 0.5,
    );
    assert.equal(restored.onFailure(10, false), true);
    assert.deepEqual(restored.toJSON(), { kind: "open", openedAt: 10, trips: 1, cooldownMs: 500 });
  });

  test("failures counted while the lane forbids opening still count once it allows it", () => {
    const b = new Breaker({ failThreshold: 2 }, () => 0.5);
    assert.equal(b.onFailure(0, false, false), false);
    assert.equal(b.onFailure(0, false, false), false);
    assert.deepEqual(b.toJSON(), { kind: "closed", consecutive: 2 });
    assert.equal(b.onFailure(0, false, true), true, "the run is 3 ≥ 2");
  });

  test("toJSON is a copy: changing it does not change the breaker", () => {
    const b = new Breaker();
    const s = b.toJSON() as { kind: "closed"; consecutive: number };
    s.consecutive = 7;
    assert.deepEqual(b.toJSON(), { kind: "closed", consecutive: 0 });
  });

  test("fromJSON refuses a state that is not one, naming the field", () => {
    const bad: unknown[] = [
      { kind: "closed", consecutive: -1 },
      { kind: "open", openedAt: 0, trips: 0, cooldownMs: 500 },
      { kind: "half_open", trips: 1 },
      { kind: "ajar" },
      null,
    ];
    for (const s of bad)
      assert.throws(() => Breaker.fromJSON(s as BreakerState), TypeError, JSON.stringify(s));
  });
});

/** One step of a breaker's life, as the pod drives it. */
type Op =
  | { t: "advance"; ms: number }
  | { t: "dispatch" }
  | { t: "succeed"; pick: number }
  | { t: "fail"; pick: number; mayOpen: boolean }
  | { t: "abandon"; pick: number };

// Weighted so a short life goes closed → open → half-open → closed or open again.
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 3000 }) }),
  },
  { weight: 4, arbitrary: fc.record({ t: fc.constant("dispatch" as const) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("succeed" as const), pick: fc.nat(7) }) },
  {
    weight: 3,
    arbitrary: fc.record({ t: fc.constant("fail" as const), pick: fc.nat(7), mayOpen: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("abandon" as const), pick: fc.nat(7) }) },
);

const settingsArb: fc.Arbitrary<Required<BreakerOptions>> = fc
  .record({
    enabled: fc.constant(true),
    failThreshold: fc.integer({ min: 1, max: 4 }),
    baseCooldownMs: fc.integer({ min: 1, max: 1000 }),
    extra: fc.integer({ min: 0, max: 10_000 }),
    backoffFactor: fc.double({ min: 1, max: 3, noNaN: true }),
  })
  .map(({ extra, ...s }) => ({ ...s, maxCooldownMs: s.baseCooldownMs + extra }));

/**
 * Runs `ops` on a breaker, restoring it from its JSON (through a string, as a store would hold it)
 * before each step listed in `restoreAt`. Returns every answer and the state after every step.
 */
function run(settings: Required<BreakerOptions>, seed: number, ops: Op[], restoreAt: Set<number>): unknown[] {
  const random = new Mulberry32(seed);
  const draw = () => random.next();
  let b = new Breaker(settings, draw);
  let now = 0;
  const calls: boolean[] = []; // outstanding calls: is each the probe?
  const trace: unknown[] = [];
  ops.forEach((op, i) => {
    if (restoreAt.has(i)) b = Breaker.fromJSON(JSON.parse(JSON.stringify(b.toJSON())), settings, draw);
    const take = (pick: number) => (calls.length === 0 ? undefined : calls.splice(pick % calls.length, 1)[0]);
    let answer: unknown;
    switch (op.t) {
      case "advance":
        now += op.ms;
        answer = [b.isTripped(now), b.reopensAt(), b.allows(now)];
        break;
      case "dispatch":
        answer = b.allows(now) ? b.onDispatch(now) : "refused";
        if (typeof answer === "boolean") calls.push(answer);
        break;
      case "succeed": {
        const probe = take(op.pick);
        answer = probe === undefined ? "none" : b.onSuccess(probe);
        break;
      }
      case "fail": {
        const probe = take(op.pick);
        answer = probe === undefined ? "none" : b.onFailure(now, probe, op.mayOpen);
        break;
      }
      case "abandon": {
        const probe = take(op.pick);
        if (probe) b.onProbeAbandoned();
        answer = probe;
        break;
      }
    }
    trace.push(answer, b.toJSON());
  });
  return trace;
}

describe("Breaker JSON round-trip (property)", () => {
  test("restoring from JSON at any points, then continuing, answers exactly as never restoring", () => {
    fc.assert(
      fc.property(
        settingsArb,
        fc.integer(),
        fc.array(opArb, { maxLength: 80 }),
        fc.array(fc.nat(80), { maxLength: 5 }),
        (settings, seed, ops, points) => {
          const straight = run(settings, seed, ops, new Set());
          const restored = run(settings, seed, ops, new Set(points));
          assert.deepEqual(restored, straight);
        },
      ),
      { numRuns: 300 },
    );
  });

  test("the generated lives reach every state (the property is not vacuous)", () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(settingsArb, fc.integer(), fc.array(opArb, { maxLength: 80 }), (settings, seed, ops) => {
        for (const s of run(settings, seed, ops, new Set())) {
          const kind = (s as Partial<BreakerState> | undefined)?.kind;
          if (kind !== undefined) seen.add(kind);
        }
      }),
      { numRuns: 300, seed: 7 }, // fixed: this checks the generator, not the breaker
    );
    assert.deepEqual([...seen].sort(), ["closed", "half_open", "open"]);
  });
});

describe("a disabled breaker (enabled: false)", () => {
  test("never opens: overload signals are counted, none isolates the pod", () => {
    const changes: string[] = [];
    const b = new Breaker(
      { enabled: false, failThreshold: 1 },
      () => 0.5,
      (t) => changes.push(t.to),
    );
    for (let i = 0; i < 50; i++) {
      assert.equal(b.onFailure(i, false), false, `signal ${i + 1} did not open it`);
      assert.equal(b.allows(i), true);
      assert.equal(b.isTripped(i), false);
    }
    assert.deepEqual(b.toJSON(), { kind: "closed", consecutive: 50 });
    assert.deepEqual(changes, []);
  });

  test("a breaker switched off while open or half-open is closed at once, and says so", () => {
    for (const state of [
      { kind: "open", openedAt: 0, trips: 2, cooldownMs: 30_000 },
      { kind: "half_open", trips: 3, probeInFlight: true },
    ] as const) {
      const changes: string[] = [];
      const b = Breaker.fromJSON(
        state,
        { enabled: false },
        () => 0.5,
        (t) => changes.push(`${t.from}→${t.to}`),
      );
      assert.deepEqual(b.toJSON(), { kind: "closed", consecutive: 0 });
      assert.equal(b.allows(1), true);
      assert.deepEqual(changes, [`${state.kind}→closed`]);
    }
  });

  test("whatever happens, it stays closed and allows every dispatch (property)", () => {
    fc.assert(
      fc.property(
        settingsArb.map((s) => ({ ...s, enabled: false })),
        fc.integer(),
        fc.array(opArb, { maxLength: 80 }),
        (settings, seed, ops) => {
          const trace = run(settings, seed, ops, new Set());
          for (let i = 0; i < trace.length; i += 2) {
            assert.notEqual(trace[i], "refused", "a dispatch was refused");
            assert.equal((trace[i + 1] as BreakerState).kind, "closed");
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
