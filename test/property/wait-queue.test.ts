/**
 * The WaitQueue against a plain model (issue 13): random pushes — new waiters at the latest
 * enqueue time, some placed by an earlier arrival (a re-acquire), some with an earlier enqueue
 * time (a fleet requeue), and waiters removed earlier queued again — and removals from anywhere.
 * After every step each answer the scheduler reads must be the model's: size, counts, heads,
 * tails, each class in serving order, the best waiter, the earliest deadline, positions, who to
 * shed. The queue keeps dead entries, moves keys when it inserts in the middle, compacts in
 * place and switches to a separate enqueue-order list and back; a mistake in any of those shows
 * as a waiter served twice, lost, out of order, or a deadline missed.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { effectiveRank, type Rank } from "../../src/core/priority.js";
import { type QueueNode, WaitQueue } from "../../src/core/wait-queue.js";
import { runs } from "./arbitraries.js";

interface Node extends QueueNode {
  id: number;
  /** The model's push counter at its last push: ties in arrival keep push order. */
  seq: number;
}

type Op =
  | { t: "push"; rank: Rank; earlierBy: number; enqueueEarlierBy: number }
  | { t: "remove"; pick: number }
  | { t: "serve" }
  | { t: "again"; pick: number }
  | { t: "tick"; ms: number };

const AGING_MS = 50;

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant("push" as const),
      rank: fc.constantFrom<Rank>(0, 1, 2),
      earlierBy: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(40) }),
      enqueueEarlierBy: fc.oneof(
        { weight: 9, arbitrary: fc.constant(0) },
        { weight: 1, arbitrary: fc.nat(20) },
      ),
    }),
  },
  { weight: 4, arbitrary: fc.record({ t: fc.constant("remove" as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("again" as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("tick" as const), ms: fc.nat(30) }) },
);

/** The model's class order: by arrival, then by push. */
const byArrival = (a: Node, b: Node): number => a.arrivedAt - b.arrivedAt || a.seq - b.seq;

/** The answers a pass and a timer read (O(n)): size, the best waiter, the earliest deadline. */
function checkHot(q: WaitQueue<Node>, queued: readonly Node[], now: number): void {
  assert.equal(q.size, queued.length, "size");
  let best: Node | null = null;
  let bestKey: [number, number, number, number] = [9, 0, 0, 0];
  for (const n of queued) {
    const key: [number, number, number, number] = [
      effectiveRank(n.rank, n.arrivedAt, now, AGING_MS),
      n.arrivedAt,
      n.rank,
      n.seq,
    ];
    const i = key.findIndex((v, k) => v !== bestKey[k]);
    if (best === null || (i >= 0 && key[i]! < bestKey[i]!)) {
      best = n;
      bestKey = key;
    }
  }
  assert.equal(q.best(now, AGING_MS), best, "best");
  const earliest = q.earliestEnqueued;
  if (queued.length === 0) assert.equal(earliest, null, "no deadline when empty");
  else {
    assert.ok(earliest !== null && queued.includes(earliest), "the earliest deadline is a waiter");
    assert.equal(earliest.enqueuedAt, Math.min(...queued.map((n) => n.enqueuedAt)), "earliest deadline");
  }
}

/** Every answer, positions included (O(n²)). */
function checkAll(q: WaitQueue<Node>, queued: readonly Node[], now: number): void {
  checkHot(q, queued, now);
  const classes = ([0, 1, 2] as Rank[]).map((r) => queued.filter((n) => n.rank === r).sort(byArrival));
  for (const r of [0, 1, 2] as Rank[]) {
    const mine = classes[r]!;
    assert.equal(q.count(r), mine.length, `count(${r})`);
    assert.deepEqual(
      [...q.waiting(r)].map((n) => n.id),
      mine.map((n) => n.id),
      `class ${r} in serving order`,
    );
    assert.equal(q.head(r), mine[0] ?? null, `head(${r})`);
    assert.equal(q.tail(r), mine.at(-1) ?? null, `tail(${r})`);
    const higher = classes.slice(0, r).reduce((sum, c) => sum + c.length, 0);
    for (const [i, n] of mine.entries()) assert.equal(q.positionOf(n), higher + i + 1, `position of ${n.id}`);
    assert.equal(q.positionForArrival(r), higher + mine.length + 1, `position for arrival ${r}`);
    const below = classes
      .slice(r + 1)
      .reverse()
      .find((c) => c.length > 0);
    assert.equal(q.newestBelow(r), below?.at(-1) ?? null, `newestBelow(${r})`);
  }
}

/** Runs `ops`, checking every answer each `fullEvery` steps (and at the end), the hot ones at every step. */
function run(ops: readonly Op[], fullEvery = 1): void {
  const q = new WaitQueue<Node>();
  const queued: Node[] = [];
  const removed: Node[] = [];
  let now = 1_000;
  let seq = 0;
  let ids = 0;
  let steps = 0;
  const push = (n: Node): void => {
    n.seq = ++seq;
    q.push(n);
    queued.push(n);
  };
  for (const op of ops) {
    if (op.t === "push") {
      const enqueuedAt = now - op.enqueueEarlierBy;
      push({ id: ++ids, seq: 0, rank: op.rank, arrivedAt: enqueuedAt - op.earlierBy, enqueuedAt, queued: 0 });
    } else if (op.t === "remove" && queued.length > 0) {
      const [n] = queued.splice(op.pick % queued.length, 1);
      q.remove(n!);
      removed.push(n!);
    } else if (op.t === "serve" && queued.length > 0) {
      const best = q.best(now, AGING_MS)!; // checked against the model at every step
      queued.splice(queued.indexOf(best), 1);
      q.remove(best);
      removed.push(best);
    } else if (op.t === "again" && removed.length > 0) {
      const [n] = removed.splice(op.pick % removed.length, 1);
      n!.enqueuedAt = now; // queued again keeping its arrival time, as a re-dispatch is
      push(n!);
    } else if (op.t === "tick") now += op.ms;
    if (++steps % fullEvery === 0) checkAll(q, queued, now);
    else checkHot(q, queued, now);
  }
  checkAll(q, queued, now);
}

describe("WaitQueue against a model", () => {
  test("every answer matches the model after every push and removal", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 120 }), (ops) => run(ops)),
      runs(300),
    );
  });

  test("long runs cross the compaction thresholds (thousands of waiters, served mostly from the front)", () => {
    // A backlog built up and then served: more than 1,024 dead entries at a list's front
    // compact it in place — moving the base when only a served prefix is dead, renumbering when
    // removals from the middle left dead entries too.
    const build = fc.array(
      fc.record({
        t: fc.constant("push" as const),
        rank: fc.constantFrom<Rank>(0, 1, 2),
        earlierBy: fc.oneof({ weight: 19, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(40) }),
        enqueueEarlierBy: fc.constant(0),
      }),
      { minLength: 3_600, maxLength: 4_000 },
    );
    const serve = fc.array(
      fc.oneof(
        { weight: 8, arbitrary: fc.constant({ t: "serve" as const }) },
        { weight: 1, arbitrary: opArb },
      ),
      { minLength: 3_600, maxLength: 4_000 },
    );
    const serveOnly = fc.array(fc.constant({ t: "serve" as const }), { minLength: 3_000, maxLength: 3_500 });
    fc.assert(
      fc.property(build, fc.oneof(serve, serveOnly), build, serveOnly, (a, b, c, d) =>
        run([...a, ...b, ...c, ...d], 500),
      ),
      runs(4),
    );
  });
});
