import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type Seq, SeqScheduler } from "./scheduler.js";

function seq(onGrant: (s: Seq) => void = () => {}): Seq {
  const s: Seq = { state: "new", prev: null, next: null, onGrant: () => onGrant(s) };
  return s;
}
const always = () => true;

describe("SeqScheduler", () => {
  test("grants in arrival order as slots free up", () => {
    const order: number[] = [];
    const sched = new SeqScheduler(1);
    const seqs = [0, 1, 2].map((i) => seq(() => order.push(i)));
    for (const s of seqs) sched.admit(s, always);
    assert.deepEqual([sched.running, sched.waiting, order], [1, 2, [0]]);
    sched.end(seqs[0]!);
    sched.end(seqs[1]!);
    assert.deepEqual(order, [0, 1, 2]);
    assert.equal(sched.maxRunningSeen, 1);
    assert.equal(sched.maxWaitingSeen, 2);
  });

  test("removes a waiter from the middle and ignores a second end", () => {
    const sched = new SeqScheduler(1);
    const [a, b, c] = [seq(), seq(), seq()];
    for (const s of [a, b, c]) sched.admit(s, always);
    sched.end(b);
    sched.end(b);
    assert.equal(sched.waiting, 1);
    sched.end(a);
    assert.equal(c.state, "running");
    sched.end(c);
    sched.end(c);
    assert.deepEqual([sched.running, sched.waiting], [0, 0]);
  });

  test("refuses past the waiting bound without touching the sequence", () => {
    const sched = new SeqScheduler(1);
    sched.admit(seq(), always);
    const over = seq();
    assert.equal(
      sched.admit(over, (waiting) => waiting < 0),
      false,
    );
    assert.equal(over.state, "new");
  });

  test("drains a long queue of instantly finishing sequences without recursing per waiter", () => {
    const sched = new SeqScheduler(1);
    // Each grant ends its sequence synchronously, as a serviceMs 0 request does.
    const first = seq();
    sched.admit(first, always);
    const rest = Array.from({ length: 50_000 }, () => seq((s) => sched.end(s)));
    for (const s of rest) sched.admit(s, always);
    sched.end(first);
    assert.deepEqual([sched.running, sched.waiting, sched.maxRunningSeen], [0, 0, 1]);
  });
});
