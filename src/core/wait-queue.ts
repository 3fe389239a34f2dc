/**
 * The waiters of one lane (DESIGN §1.1): one queue per own class (class-queue.ts), each kept in
 * arrival order. Every operation the scheduler uses on the hot path is O(1) amortized: push,
 * remove, best head, newest lower-class waiter, earliest deadline. (Peers' lessons: cockatiel
 * drains with `Array#shift`, p-queue splices an array for priority; both degrade on a 100k
 * backlog.) Once waiters of configured keys share a class, that class serves their flows by
 * weight (fair-queue.ts), at O(log flows) per change.
 *
 * The lists are arrays with a start index, not linked nodes: V8's scavenger discovers a linked
 * chain one node at a time, and a 100k backlog of linked waiters cost ~1.6× as much GC per
 * megabyte copied as the same waiters in an array (`bench/waiter-shape.ts`). A waiter's `queued`
 * field is its entry's index plus its list's base, so a removed waiter (`queued` 0) leaves a dead
 * entry that no later push can revive: a new entry has a new index. Dead entries are dropped when
 * they reach either end of their list, and a list compacts in place when they outnumber its
 * waiters, so a cancelled waiter is not kept for long (arrival-list.ts).
 *
 * Between classes the order is the effective class (aging), then arrival: the best waiter is one
 * of the three classes' oldest. Inside a class flows share by weight: the class's fair choice is
 * served instead of its oldest when it still outranks every other class's oldest by effective
 * class, then arrival — so nothing is ever served ahead of another class's waiter it would not
 * have been served ahead of without flows, and aging still lifts a class by its oldest waiter.
 * The earliest deadline is a class's oldest too while every class is also in enqueue order — the
 * usual case, as a new arrival goes at the end with the latest enqueue time. A waiter placed by
 * an earlier arrival time (a re-acquire, a re-dispatch) breaks that, and from then until the
 * queue empties a fourth list keeps every waiter in enqueue order.
 */
import { EnqueueOrder, type QueueNode } from "./arrival-list.js";
import { ClassQueue } from "./class-queue.js";
import type { Flow } from "./fair-queue.js";
import { effectiveRank, type Rank } from "./priority.js";

export type { QueueNode } from "./arrival-list.js";

export class WaitQueue<T extends QueueNode> {
  // A waiter is only ever queued in its own class's queue (its class never changes).
  readonly #classes: [ClassQueue<T>, ClassQueue<T>, ClassQueue<T>] = [
    new ClassQueue(),
    new ClassQueue(),
    new ClassQueue(),
  ];
  /** Every waiter in enqueue order while some class is out of it; null while each class is in it. */
  #byEnqueue: EnqueueOrder<T> | null = null;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Waiters of own class `rank`. */
  count(rank: Rank): number {
    return this.#classes[rank].live;
  }

  /** Waiters of flow `flow` (null: the anonymous flow), across the classes. */
  countOf(flow: Flow | null): number {
    const c = this.#classes;
    return c[0].countOf(flow) + c[1].countOf(flow) + c[2].countOf(flow);
  }

  /** The oldest waiter of own class `rank`. */
  head(rank: Rank): T | null {
    return this.#classes[rank].first;
  }

  /** The waiter own class `rank` serves next: its oldest, or its fair flow's oldest while flows share it. */
  next(rank: Rank): T | null {
    return this.#classes[rank].next;
  }

  /** The newest waiter of own class `rank`. */
  tail(rank: Rank): T | null {
    return this.#classes[rank].last;
  }

  /** The waiters of own class `rank`, oldest first. */
  waiting(rank: Rank): Iterable<T> {
    return this.#classes[rank].waiting();
  }

  /** The flows with waiters of own class `rank`, and how many each has. */
  flowCounts(rank: Rank): Iterable<[Flow, number]> {
    return this.#classes[rank].flowCounts();
  }

  /**
   * The part of each flow's weight this queue serves in own class `rank` (absent: all of it): a
   * fleet store sets it for flows that wait on other replicas too, so the fleet as a whole serves
   * each flow by its weight once (store/redis/flow-advert.ts).
   */
  setPortions(rank: Rank, portions: ReadonlyMap<Flow, number>): void {
    this.#classes[rank].setPortions(portions);
  }

  /** The waiter that has waited longest in this queue (earliest enqueue): the next deadline. */
  get earliestEnqueued(): T | null {
    if (this.#byEnqueue !== null) return this.#byEnqueue.first;
    let earliest: T | null = null;
    for (let r = 0; r < 3; r++) {
      const head = this.#classes[r]!.first;
      if (head !== null && (earliest === null || head.enqueuedAt < earliest.enqueuedAt)) earliest = head;
    }
    return earliest;
  }

  /**
   * Adds a waiter. Usually it arrived last and goes at the end; a re-acquire that keeps an
   * earlier arrival time (DESIGN §1.2) is placed by arrival, scanning from the end.
   */
  push(node: T): void {
    const broken = this.#classes[node.rank].add(node);
    this.#size++;
    if (this.#byEnqueue !== null) this.#byEnqueue.add(node);
    else if (broken) this.#byEnqueue = this.#enqueueOrder();
  }

  /** Removes a waiter that is in this queue. */
  remove(node: T): void {
    this.#classes[node.rank].remove(node);
    this.#size--;
    if (this.#byEnqueue === null) return;
    // Empty, every class is in enqueue order again.
    if (this.#size === 0) this.#byEnqueue = null;
    else {
      this.#byEnqueue.live--;
      this.#byEnqueue.trim();
    }
  }

  /**
   * `node` is about to be granted (the scheduler then removes it): its flow pays one grant in
   * its class's fair queue. A waiter removed without a grant (cancel, timeout, shed) pays nothing.
   */
  charge(node: T): void {
    this.#classes[node.rank].charge(node);
  }

  /** The waiters so far in enqueue order: the three classes (each in that order) merged. */
  #enqueueOrder(): EnqueueOrder<T> {
    const order = new EnqueueOrder<T>();
    const all: T[] = [];
    for (let r = 0; r < 3; r++) for (const n of this.waiting(r as Rank)) all.push(n);
    all.sort((a, b) => a.enqueuedAt - b.enqueuedAt); // stable: a class's own order is kept
    for (const n of all) order.add(n);
    return order;
  }

  /**
   * The waiter to serve next: the class whose oldest waiter is best by effective class, then
   * arrival; inside it, its fair choice when that one still outranks every other class's oldest
   * (else its oldest: aging lifted it past another class).
   */
  best(nowMs: number, agingMs: number): T | null {
    // One class waiting (a busy lane's usual state): no class to compare with, so its next goes
    // without finding its oldest (with flows, the top of a heap over them).
    const c = this.#classes;
    const size = this.#size;
    if (c[1].live === size) return c[1].next; // also an empty queue's null
    if (c[0].live === size) return c[0].next;
    if (c[2].live === size) return c[2].next;
    let best: T | null = null;
    let bestRank = 3;
    let second: T | null = null;
    let secondRank = 3;
    for (let r = 0; r < 3; r++) {
      const head = this.#classes[r]!.first;
      if (head === null) continue;
      const eff = effectiveRank(head.rank, head.arrivedAt, nowMs, agingMs);
      if (best === null || eff < bestRank || (eff === bestRank && head.arrivedAt < best.arrivedAt)) {
        second = best;
        secondRank = bestRank;
        best = head;
        bestRank = eff;
      } else if (
        second === null ||
        eff < secondRank ||
        (eff === secondRank && head.arrivedAt < second.arrivedAt)
      ) {
        second = head;
        secondRank = eff;
      }
    }
    if (best === null || !this.#classes[best.rank].flowing) return best;
    const fair = this.#classes[best.rank].next!;
    if (fair === best || second === null) return fair;
    const eff = effectiveRank(fair.rank, fair.arrivedAt, nowMs, agingMs);
    return eff < secondRank || (eff === secondRank && fair.arrivedAt < second.arrivedAt) ? fair : best;
  }

  /** The newest waiter whose own class is below `rank`, lowest class first: who to shed. */
  newestBelow(rank: Rank): T | null {
    for (let r = 2; r > rank; r--) {
      const tail = this.#classes[r as Rank].last;
      if (tail !== null) return tail;
    }
    return null;
  }

  /**
   * 1-based position of `node` among waiters served before it, counting every waiter of a higher
   * own class and those of its class that arrived earlier. O(position in its own class).
   */
  positionOf(node: T): number {
    let position = 1;
    for (let r = 0; r < node.rank; r++) position += this.#classes[r as Rank].live;
    return position + this.#classes[node.rank].countBefore(node);
  }

  /**
   * Waiters that would be served before a new arrival of class `rank` (and flow `flow`), plus one.
   * While flows share the class, its share of the class is estimated: its own waiters and the
   * new one take turns with the others by weight, so about (its waiters + 1) × (the backlogged
   * weights with its own) / its weight go first — never more than the whole class.
   */
  positionForArrival(rank: Rank, flow?: Flow | null): number {
    let position = 1;
    for (let r = 0; r < rank; r++) position += this.#classes[r as Rank].live;
    const cls = this.#classes[rank];
    if (!cls.flowing || flow === undefined) return position + cls.live;
    const weight = flow?.weight ?? 1;
    const own = cls.countOf(flow);
    const total = cls.backloggedWeight + (own === 0 ? weight : 0);
    const ahead = Math.ceil(((own + 1) * total) / weight) - 1;
    return position + Math.min(cls.live, Math.max(own, ahead));
  }
}
