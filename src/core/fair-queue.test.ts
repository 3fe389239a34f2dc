import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FairQueue, type Flow, type FlowState, OldestHeap, TagHeap } from "./fair-queue.js";
import type { Rank } from "./priority.js";
import { type QueueNode, WaitQueue } from "./wait-queue.js";

/** A flow with `backlog` waiters, served one grant at a time. */
interface State extends FlowState {
  backlog: number;
}

const state = (name: string, weight: number, backlog = 0): State => ({
  flow: { name, weight },
  vstart: 0,
  turn: 0,
  fairAt: -1,
  headArrivedAt: 0,
  headEnqueuedAt: 0,
  oldAt: -1,
  backlog,
});

/** Serves `n` grants: each goes to the queue's next flow, which leaves when its backlog is gone. */
function serve(q: FairQueue<State>, n: number): string[] {
  const served: string[] = [];
  for (let i = 0; i < n; i++) {
    const s = q.next;
    if (s === null) break;
    served.push(s.flow.name);
    q.charge(s);
    if (--s.backlog === 0) q.leave(s);
  }
  return served;
}

const tally = (names: string[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const n of names) out[n] = (out[n] ?? 0) + 1;
  return out;
};

describe("FairQueue", () => {
  test("serves backlogged flows in proportion to their weights", () => {
    const q = new FairQueue<State>();
    for (const s of [state("a", 1, 1000), state("b", 2, 1000), state("c", 5, 1000)]) q.join(s);
    assert.deepEqual(tally(serve(q, 800)), { a: 100, b: 200, c: 500 });
  });

  test("equal weights take turns, in the order they joined", () => {
    const q = new FairQueue<State>();
    for (const s of [state("a", 1, 3), state("b", 1, 3), state("c", 1, 3)]) q.join(s);
    assert.deepEqual(serve(q, 9), ["a", "b", "c", "a", "b", "c", "a", "b", "c"]);
  });

  test("a flow alone gets every grant (work-conserving)", () => {
    const q = new FairQueue<State>();
    q.join(state("a", 1, 50));
    assert.deepEqual(tally(serve(q, 50)), { a: 50 });
    assert.equal(q.next, null);
  });

  test("a flow back from idle starts at virtual now: no credit for the time it was away", () => {
    const q = new FairQueue<State>();
    const a = state("a", 1, 1000);
    const b = state("b", 1, 1);
    q.join(a);
    q.join(b);
    serve(q, 2); // a, b: b leaves
    serve(q, 100); // a alone for 100 grants
    b.backlog = 1000;
    q.join(b);
    // Had b kept its old tag it would take the next 100 grants; it takes turns at once instead.
    assert.deepEqual(serve(q, 6), ["b", "a", "b", "a", "b", "a"]);
  });

  test("a flow that comes back is served within one round of the others", () => {
    const q = new FairQueue<State>();
    const flows = [1, 2, 3, 4].map((w) => state(`f${w}`, w, 10_000));
    for (const s of flows) q.join(s);
    serve(q, 500);
    const late = state("late", 1, 1);
    q.join(late);
    // One round: every other flow served at most its weight's worth before the newcomer.
    const before = serve(q, 11).indexOf("late");
    assert.ok(before >= 0 && before <= 10, `served after ${before} grants`);
  });

  test("a changed weight counts from the next grant", () => {
    const q = new FairQueue<State>();
    const a = state("a", 1, 10_000);
    const b = state("b", 1, 10_000);
    q.join(a);
    q.join(b);
    serve(q, 100);
    (b.flow as Flow).weight = 3;
    assert.deepEqual(tally(serve(q, 400)), { a: 100, b: 300 });
  });
});

describe("TagHeap and OldestHeap", () => {
  const random = (seed: number) => () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };

  test("the tag heap keeps the smallest tag, then turn, on top through inserts, served flows sinking and removals", () => {
    const heap = new TagHeap<State>();
    const rand = random(7);
    const live: State[] = [];
    let turns = 0;
    for (let i = 0; i < 3000; i++) {
      const r = rand();
      if (r < 0.45 || live.length === 0) {
        const item = state(`s${i}`, 1);
        item.vstart = Math.floor(rand() * 20); // many equal tags: the turn decides
        item.turn = turns++;
        heap.insert(item);
        live.push(item);
      } else if (r < 0.8) {
        const item = live[Math.floor(rand() * live.length)]!;
        item.vstart += Math.floor(rand() * 3);
        item.turn = turns++;
        heap.sink(item);
      } else {
        const item = live.splice(Math.floor(rand() * live.length), 1)[0]!;
        heap.remove(item);
        assert.equal(item.fairAt, -1);
      }
      const min = [...live].sort((a, b) => a.vstart - b.vstart || a.turn - b.turn)[0] ?? null;
      assert.equal(heap.top, min);
      for (const item of live) assert.equal(heap.items[item.fairAt], item);
    }
  });

  test("the oldest heap keeps the earliest arrival, then enqueue time, on top as heads move either way", () => {
    const heap = new OldestHeap<State>();
    const rand = random(11);
    const live: State[] = [];
    for (let i = 0; i < 3000; i++) {
      const r = rand();
      if (r < 0.45 || live.length === 0) {
        const item = state(`s${i}`, 1);
        item.headArrivedAt = Math.floor(rand() * 50);
        item.headEnqueuedAt = i;
        heap.insert(item);
        live.push(item);
      } else if (r < 0.8) {
        const item = live[Math.floor(rand() * live.length)]!;
        item.headArrivedAt = Math.floor(rand() * 50);
        item.headEnqueuedAt = Math.floor(rand() * 3000);
        heap.update(item);
      } else {
        const item = live.splice(Math.floor(rand() * live.length), 1)[0]!;
        heap.remove(item);
        assert.equal(item.oldAt, -1);
      }
      const min = Math.min(...live.map((x) => x.headArrivedAt));
      const top = heap.top;
      assert.equal(top?.headArrivedAt ?? Number.POSITIVE_INFINITY, min);
      if (top !== null) {
        const tied = live.filter((x) => x.headArrivedAt === min).map((x) => x.headEnqueuedAt);
        assert.equal(top.headEnqueuedAt, Math.min(...tied));
      }
      for (const item of live) assert.equal(heap.items[item.oldAt], item);
    }
  });
});

describe("WaitQueue with flows", () => {
  type Node = QueueNode & { name: string; flow: Flow | null };
  const heavy: Flow = { name: "heavy", weight: 3 };
  const light: Flow = { name: "light", weight: 1 };
  const node = (name: string, flow: Flow | null, arrivedAt: number, rank: Rank = 1): Node => ({
    name,
    flow,
    rank,
    arrivedAt,
    enqueuedAt: arrivedAt,
    queued: 0,
  });
  const drain = (q: WaitQueue<Node>, nowMs: number): string[] => {
    const out: string[] = [];
    for (let b = q.best(nowMs, 60_000); b !== null; b = q.best(nowMs, 60_000)) {
      out.push(b.name);
      q.charge(b);
      q.remove(b);
    }
    return out;
  };

  test("shares a class by weight, FIFO within a flow, the anonymous flow weighing 1", () => {
    const q = new WaitQueue<Node>();
    for (let i = 0; i < 6; i++) q.push(node(`h${i}`, heavy, i));
    for (let i = 0; i < 3; i++) q.push(node(`l${i}`, light, 10 + i));
    for (let i = 0; i < 2; i++) q.push(node(`n${i}`, null, 20 + i));
    assert.equal(q.head(1)?.name, "h0");
    assert.equal(q.tail(1)?.name, "n1");
    // Tags: heavy 0, 1/3, 2/3, 1, …; light 0, 1, 2; anonymous 0, 1. Ties: who took the tag first.
    assert.deepEqual(drain(q, 100), ["h0", "l0", "n0", "h1", "h2", "l1", "n1", "h3", "h4", "h5", "l2"]);
    assert.equal(q.size, 0);
  });

  test("a flow's portion (a fleet: the part of its weight served here) scales its service in its class only", () => {
    const q = new WaitQueue<Node>();
    // heavy (3) waits on two replicas: here it is served at half its weight, 1.5 against light's 1.
    q.setPortions(1, new Map([[heavy, 0.5]]));
    for (let i = 0; i < 300; i++) q.push(node(`h${i}`, heavy, i));
    for (let i = 0; i < 300; i++) q.push(node(`l${i}`, light, 1000 + i));
    const first = drain(q, 5000).slice(0, 250);
    const h = first.filter((n) => n.startsWith("h")).length;
    assert.equal(h, 150, `heavy took 3/5 of 250 grants (took ${h})`);
    // Bulk has no portions set: heavy keeps its full weight there, 3 to 1.
    for (let i = 0; i < 100; i++) q.push(node(`h${i}`, heavy, 10_000 + i, 2));
    for (let i = 0; i < 100; i++) q.push(node(`l${i}`, light, 20_000 + i, 2));
    const bulk = drain(q, 30_000).slice(0, 100);
    assert.equal(bulk.filter((n) => n.startsWith("h")).length, 75);
    // Cleared (an empty map): full weight again in the default class.
    q.setPortions(1, new Map());
    for (let i = 0; i < 100; i++) q.push(node(`h${i}`, heavy, 40_000 + i));
    for (let i = 0; i < 100; i++) q.push(node(`l${i}`, light, 50_000 + i));
    assert.equal(
      drain(q, 60_000)
        .slice(0, 100)
        .filter((n) => n.startsWith("h")).length,
      75,
    );
  });

  test("another class still goes by effective class, then arrival", () => {
    const q = new WaitQueue<Node>();
    q.push(node("h-old", heavy, 0));
    q.push(node("l-new", light, 50));
    q.push(node("i", null, 40, 0));
    // interactive first; then default shares by weight (light's turn is as good as heavy's)
    assert.deepEqual(drain(q, 60), ["i", "h-old", "l-new"]);
    const r = new WaitQueue<Node>();
    r.push(node("h-old", heavy, 0));
    r.push(node("l-new", light, 70));
    r.push(node("b", null, 65, 2));
    r.charge(r.best(80, 60_000)!); // heavy served once
    r.remove(r.head(1)!);
    r.push(node("h-2", heavy, 71));
    // light's tag is now ahead of heavy's, and light (arrived 70) outranks bulk (65) by class
    assert.equal(r.best(80, 60_000)?.name, "l-new");
  });

  test("a class aged past another serves its oldest, not its fair turn", () => {
    const q = new WaitQueue<Node>();
    q.push(node("h-old", heavy, 0, 2));
    q.push(node("l-new", light, 119_500, 2));
    q.push(node("i", null, 119_000, 0));
    q.charge(q.head(2)!); // heavy's tag moves past light's: light's turn is next in bulk
    assert.equal(q.next(2)?.name, "l-new");
    // At 120 s h-old has aged to interactive and arrived before i: the class goes, as its oldest.
    assert.equal(q.best(120_000, 60_000)?.name, "h-old");
  });

  test("a waiter whose key moved to another flow while it waited (a reload) is still found and removed", () => {
    const q = new WaitQueue<Node>();
    const a = node("a", heavy, 1);
    const b = node("b", light, 2);
    const c = node("c", null, 3);
    for (const n of [a, b, c]) q.push(n);
    a.flow = light; // its key now names another tenant
    c.flow = heavy;
    q.charge(a);
    q.remove(a);
    q.remove(c);
    assert.equal(q.size, 1);
    assert.deepEqual(drain(q, 10), ["b"]);
    assert.equal(q.head(1), null);
  });

  test("a flowed waiter's removal from the middle and position estimate", () => {
    const q = new WaitQueue<Node>();
    const nodes = [0, 1, 2, 3].map((i) => node(`h${i}`, heavy, i));
    for (const n of nodes) q.push(n);
    q.push(node("l0", light, 10));
    q.remove(nodes[1]!);
    assert.equal(q.size, 4);
    assert.equal(q.positionOf(nodes[2]!), 2);
    // A new light waiter: light has 1 waiting, weights 3 + 1 backlogged → about 2 × 4 / 1 = 8
    // ahead, capped at the class's 4. A new heavy one: (3 + 1) × 4 / 3 → 5, capped at 4. A new
    // flow of weight 4: 1 × (4 + 4) / 4 → 1 ahead (the anonymous arrival counts the whole class).
    assert.equal(q.positionForArrival(1, light), 5);
    assert.equal(q.positionForArrival(1, heavy), 5);
    assert.equal(q.positionForArrival(1, { name: "new", weight: 4 }), 2);
    assert.equal(q.positionForArrival(1), 5);
    assert.deepEqual(drain(q, 20), ["h0", "l0", "h2", "h3"]);
  });
});
