/**
 * The solo path (issue 13): a lane whose path is its own concurrency budget alone checks room with
 * one call, is granted and given back by that budget directly when the store counts in place (the
 * memory store: `Grants.inPlace`, `Path.solo`), and is asked only for its deadlines when the timer
 * is armed (`Scheduler.nextWakeAt`). This runs the same random operations on two governors with
 * manual clocks and asks for the same answers after every step — which calls were granted,
 * queued, refused (and with what code), aborted or timed out, each lease's queue wait, and the
 * whole snapshot:
 *
 * - the solo governor: the default memory store, lanes with no group;
 * - the walking governor: every lane also in an inert group (a limit no run reaches), so no path
 *   is solo, on a memory store whose `commit`/`give` are overridden and only call the originals,
 *   so every take and give goes through the store's loop over the path.
 *
 * A timer armed later than it should be would show as a timeout answered at a different step.
 * Reconfigures move lanes in and out of a real group while leases taken on the old path are
 * held, so a lease given back after its lane changed must give back what it took.
 */
import { describe, test } from "node:test";
import fc from "fast-check";
import type { Path } from "../../src/core/path.js";
import { Governor, type GovernorOptions, type Lease, type Priority } from "../../src/index.js";
import { MemoryStore } from "../../src/store/memory.js";
import { ManualClock } from "../../src/testing.js";
import { flush } from "../helpers/index.js";
import { runs } from "./arbitraries.js";

/** The general path: every take and give goes through the store, as with any other store. */
class WalkingStore extends MemoryStore {
  override readonly countsInPlace = false; // its commit and give below are more than the counts
  override commit(path: Path, cost: number, nowMs: number, from?: number): void {
    super.commit(path, cost, nowMs, from);
  }
  override give(path: Path, cost: number, nowMs: number, from?: number): void {
    super.give(path, cost, nowMs, from);
  }
}

type Op =
  | { t: "acquire"; lane: 0 | 1; pri: Priority; key: "k" | undefined; abortable: boolean; noWait: boolean }
  | { t: "abort"; pick: number }
  | { t: "end"; pick: number; how: "release" | "succeeded" | "failed" | "unsent" }
  | { t: "advance"; ms: number }
  | { t: "reconfigure"; limits: [number, number]; reserve: number; grouped: [boolean, boolean] };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      t: fc.constant("acquire" as const),
      lane: fc.constantFrom(0 as const, 1 as const),
      pri: fc.constantFrom<Priority>("interactive", "default", "bulk"),
      key: fc.constantFrom(undefined, undefined, "k" as const),
      abortable: fc.boolean(),
      noWait: fc.constantFrom(false, false, false, true),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("abort" as const), pick: fc.nat(20) }) },
  {
    weight: 8,
    arbitrary: fc.record({
      t: fc.constant("end" as const),
      pick: fc.nat(20),
      how: fc.constantFrom("release" as const, "succeeded" as const, "failed" as const, "unsent" as const),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ t: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 700 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant("reconfigure" as const),
      limits: fc.tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 })),
      reserve: fc.nat(1),
      grouped: fc.tuple(fc.boolean(), fc.boolean()),
    }),
  },
);

/** No run holds this many: on the walking side it only keeps every path from being solo. */
const INERT = { limit: 1_000 };

function options(
  limits: [number, number],
  reserve: number,
  grouped: [boolean, boolean],
  walking: boolean,
): GovernorOptions {
  const lane = (i: 0 | 1) => ({
    limit: limits[i],
    reserve: Math.min(reserve, limits[i] - 1),
    queueLimit: 3,
    queueTimeoutMs: 500,
    agingMs: 200,
    group: [...(grouped[i] ? ["g"] : []), ...(walking ? ["inert"] : [])],
  });
  return {
    groups: walking ? { g: { limit: 3 }, inert: INERT } : { g: { limit: 3 } },
    keys: { k: { maxInflight: 3 } },
    lanes: { A: lane(0), B: lane(1) },
  };
}

interface Call {
  lease: Lease | undefined;
  controller: AbortController | undefined;
  outcome: string;
}

/** One governor and what its callers saw. */
class Side {
  readonly clock = new ManualClock();
  readonly gov: Governor;
  readonly calls: Call[] = [];

  constructor(readonly walking: boolean) {
    const store = walking ? new WalkingStore() : undefined;
    this.gov = new Governor({ ...options([2, 3], 1, [false, false], walking), clock: this.clock, store });
  }

  apply(op: Op): void {
    switch (op.t) {
      case "acquire": {
        const controller = op.abortable ? new AbortController() : undefined;
        const call: Call = { lease: undefined, controller, outcome: "pending" };
        this.calls.push(call);
        this.gov
          .acquire(op.lane === 0 ? "A" : "B", {
            priority: op.pri,
            key: op.key,
            signal: controller?.signal,
            wait: op.noWait ? false : undefined,
          })
          .then(
            (lease) => {
              call.lease = lease;
              call.outcome = `granted after ${lease.queuedMs} ms`;
            },
            (error: { code?: string; message?: string }) => {
              // The message carries the numbers (waited ms, position): a late timeout shows.
              call.outcome = `refused ${error.code ?? "abort"}: ${error.message}`;
            },
          );
        return;
      }
      case "abort": {
        const live = this.calls.filter((c) => c.controller !== undefined && !c.controller.signal.aborted);
        live[op.pick % Math.max(1, live.length)]?.controller?.abort(new Error("abort"));
        return;
      }
      case "end": {
        const held = this.calls.filter((c) => c.lease !== undefined && c.outcome.startsWith("granted"));
        const call = held[op.pick % Math.max(1, held.length)];
        if (call === undefined) return;
        const lease = call.lease!;
        if (op.how === "release") lease.release();
        else if (op.how === "succeeded") lease.succeeded();
        else if (op.how === "failed") lease.failed(new Error("boom"));
        else lease.release({ sent: false });
        call.outcome = `ended (${call.outcome})`;
        return;
      }
      case "advance":
        this.clock.advance(op.ms);
        return;
      case "reconfigure":
        this.gov.reconfigure(options(op.limits, op.reserve, op.grouped, this.walking));
        return;
    }
  }

  /** Everything a caller or an operator can see, as plain data. */
  seen(): unknown {
    const { generated_at: _, groups, ...snapshot } = this.gov.snapshot();
    const real = groups.filter((g) => g.group !== "inert");
    return { calls: this.calls.map((c) => c.outcome), snapshot: { ...snapshot, groups: real } };
  }
}

describe("solo path: a lane of one concurrency budget on the memory store", () => {
  test("answers every random sequence exactly as the path through the store does", async () => {
    let grants = 0;
    let timeouts = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 80, size: "max" }), async (ops) => {
        const solo = new Side(false);
        const walking = new Side(true);
        for (const [i, op] of ops.entries()) {
          solo.apply(op);
          walking.apply(op);
          await flush();
          const a = solo.seen();
          const b = walking.seen();
          if (JSON.stringify(a) !== JSON.stringify(b))
            throw new Error(
              `step ${i} ${JSON.stringify(op)} differs:\nsolo    ${JSON.stringify(a)}\nwalking ${JSON.stringify(b)}`,
            );
        }
        // Everything ends: releases grant the waiters, whose leases are released in turn.
        for (let round = 0; round < 30; round++) {
          for (const side of [solo, walking]) for (const c of side.calls) c.lease?.release();
          await flush();
        }
        for (const side of [solo, walking]) side.clock.advance(10_000);
        await flush();
        if (JSON.stringify(solo.seen()) !== JSON.stringify(walking.seen())) throw new Error("drain differs");
        for (const lane of solo.gov.snapshot().lanes)
          if (lane.inflight !== 0 || lane.queued !== 0)
            throw new Error(`lane ${lane.lane} left ${lane.inflight} in flight, ${lane.queued} queued`);
        grants += solo.calls.filter((c) => c.lease !== undefined).length;
        timeouts += solo.calls.filter((c) => c.outcome.startsWith("refused queue_timeout")).length;
      }),
      runs(200),
    );
    // Keep the generator honest: the runs must have granted calls, and timed some out.
    if (grants < 200) throw new Error(`only ${grants} grants over the runs`);
    if (timeouts < 20) throw new Error(`only ${timeouts} queue timeouts over the runs`);
  });
});
