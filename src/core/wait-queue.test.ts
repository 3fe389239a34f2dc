import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Rank } from "./priority.js";
import { type QueueNode, WaitQueue } from "./wait-queue.js";

type Node = QueueNode & { name: string };
const node = (name: string, rank: Rank, arrivedAt: number, enqueuedAt = arrivedAt): Node => ({
  name,
  rank,
  arrivedAt,
  enqueuedAt,
  queued: 0,
});

/** Serves the queue to the end at `nowMs`: the names in the order served. */
function drain(q: WaitQueue<Node>, nowMs: number): string[] {
  const served: string[] = [];
  for (let b = q.best(nowMs, 60_000); b !== null; b = q.best(nowMs, 60_000)) {
    served.push(b.name);
    q.remove(b);
  }
  return served;
}

describe("WaitQueue", () => {
  test("serves by class, then by arrival within a class", () => {
    const q = new WaitQueue<Node>();
    q.push(node("bulk-1", 2, 1));
    q.push(node("default-1", 1, 2));
    q.push(node("interactive-1", 0, 3));
    q.push(node("default-2", 1, 4));
    assert.deepEqual(drain(q, 5), ["interactive-1", "default-1", "default-2", "bulk-1"]);
    assert.equal(q.size, 0);
  });

  test("ages a waiter one class per agingMs, and ties go to the earlier arrival", () => {
    const q = new WaitQueue<Node>();
    q.push(node("bulk-old", 2, 0));
    q.push(node("interactive-new", 0, 119_000));
    // at 120 s the bulk waiter has aged two steps to interactive and arrived first
    assert.equal(q.best(120_000, 60_000)?.name, "bulk-old");
    assert.equal(q.best(119_999, 60_000)?.name, "interactive-new");
  });

  test("sheds the newest waiter of the lowest class below the arrival's", () => {
    const q = new WaitQueue<Node>();
    q.push(node("bulk-1", 2, 1));
    q.push(node("bulk-2", 2, 2));
    q.push(node("default-1", 1, 3));
    assert.equal(q.newestBelow(0)?.name, "bulk-2");
    assert.equal(q.newestBelow(1)?.name, "bulk-2");
    assert.equal(q.newestBelow(2), null);
  });

  test("places a re-acquire by its original arrival time but keeps deadlines in enqueue order", () => {
    const q = new WaitQueue<Node>();
    q.push(node("a", 1, 10, 10));
    q.push(node("b", 1, 20, 20));
    q.push(node("reconnect", 1, 5, 30));
    assert.equal(q.best(30, 60_000)?.name, "reconnect");
    assert.equal(q.earliestEnqueued?.name, "a");
    assert.equal(q.positionOf(q.head(1)!), 1);
  });

  test("removes from the middle and keeps counts exact", () => {
    const q = new WaitQueue<Node>();
    const nodes = [0, 1, 2, 3].map((i) => node(`n${i}`, 1, i));
    for (const n of nodes) q.push(n);
    q.remove(nodes[2]!);
    q.remove(nodes[0]!);
    assert.equal(q.count(1), 2);
    assert.equal(q.head(1)?.name, "n1");
    assert.equal(q.earliestEnqueued?.name, "n1");
    assert.equal(q.positionOf(nodes[3]!), 2);
    assert.equal(q.positionForArrival(1), 3);
  });

  test("a waiter removed from the middle and queued again is in the queue once", () => {
    const q = new WaitQueue<Node>();
    const nodes = [0, 1, 2, 3].map((i) => node(`n${i}`, 1, i));
    for (const n of nodes) q.push(n);
    q.remove(nodes[1]!); // its entry stays behind, dead
    q.push(nodes[1]!); // and it comes back, placed by arrival
    assert.equal(q.size, 4);
    assert.deepEqual(
      [...q.waiting(1)].map((n) => n.name),
      ["n0", "n1", "n2", "n3"],
      "once, in arrival order",
    );
    assert.deepEqual(drain(q, 10), ["n0", "n1", "n2", "n3"]);
    assert.equal(q.size, 0);
    assert.equal(q.earliestEnqueued, null);
  });

  test("an insert near the front keeps a waiter queued again right after its dead entry", () => {
    const q = new WaitQueue<Node>();
    const nodes = [0, 1, 2, 3, 4, 5].map((i) => node(`n${i}`, 1, i));
    for (const n of nodes) q.push(n);
    q.remove(nodes[1]!);
    q.push(nodes[1]!); // its live entry goes right after its dead one
    const early = node("early", 1, 1.5, 10); // a re-dispatch: arrived long ago, placed near the front
    q.push(early);
    assert.deepEqual(
      [...q.waiting(1)].map((n) => n.name),
      ["n0", "n1", "early", "n2", "n3", "n4", "n5"],
    );
    assert.equal(q.positionOf(nodes[1]!), 2);
    assert.equal(q.positionOf(early), 3);
    assert.deepEqual(drain(q, 20), ["n0", "n1", "early", "n2", "n3", "n4", "n5"]);
  });

  test("after many removals from the middle the order, positions and deadlines stay exact", () => {
    const q = new WaitQueue<Node>();
    const nodes = Array.from({ length: 10_000 }, (_, i) => node(`n${i}`, (i % 3) as Rank, i));
    for (const n of nodes) q.push(n);
    const kept = nodes.filter((_, i) => i % 100 === 7); // 99 in 100 leave (cancelled, timed out)
    for (const n of nodes) if (!kept.includes(n)) q.remove(n);
    assert.equal(q.size, kept.length);
    assert.equal(q.earliestEnqueued, kept[0]);
    for (const r of [0, 1, 2] as Rank[]) {
      const mine = kept.filter((n) => n.rank === r);
      assert.deepEqual([...q.waiting(r)], mine);
      assert.equal(q.head(r), mine[0] ?? null);
      assert.equal(q.tail(r), mine.at(-1) ?? null);
      mine.forEach((n, i) => {
        const higher = kept.filter((k) => k.rank < r).length;
        assert.equal(q.positionOf(n), higher + i + 1);
      });
    }
  });
});
