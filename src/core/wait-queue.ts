/**
 * The waiters of one lane (DESIGN §1.1): three FIFO lists, one per own class, each kept in
 * arrival order, plus one list in enqueue order for queue deadlines. Every operation the scheduler
 * uses on the hot path is O(1) amortized: push, remove, best head, newest lower-class waiter,
 * earliest deadline. (Peers' lessons: cockatiel drains with `Array#shift`, p-queue splices an
 * array for priority; both degrade on a 100k backlog.)
 *
 * The lists are arrays with a start index, not linked nodes: V8's scavenger discovers a linked
 * chain one node at a time, and a 100k backlog of linked waiters cost ~1.6× as much GC per
 * megabyte copied as the same waiters in an array (`bench/waiter-shape.ts`). Each entry carries
 * the number its push gave the waiter (`queued`); a removed waiter's number is cleared, so its
 * entry is dead even if the waiter is queued again later, and dead entries are dropped when they
 * reach either end of their list; a list compacts when they outnumber its waiters, so a
 * cancelled waiter is not kept for long.
 *
 * The best waiter is always one of the three heads: within one own class, the head arrived
 * first, so it has both the highest effective class and the earliest arrival.
 */
import { effectiveRank, type Rank } from "./priority.js";

/** What a queue holds: the scheduler's ticket, reduced to the fields ordering needs. */
export interface QueueNode {
  rank: Rank;
  arrivedAt: number;
  enqueuedAt: number;
  /** The number of its entry while it is in a queue, 0 when it is in none (set by the queue). */
  queued: number;
}

/** One list: entries from `start` on, in order; an entry is live while its waiter holds its number. */
class List<T extends QueueNode> {
  items: T[] = [];
  /** Each entry's number (small integers: no object per entry). */
  numbers: number[] = [];
  start = 0;
  live = 0;

  #alive(i: number): boolean {
    return this.items[i]!.queued === this.numbers[i];
  }

  /** The first live entry (the list is trimmed, so it is the one at `start`). */
  get first(): T | null {
    return this.live === 0 ? null : this.items[this.start]!;
  }

  get last(): T | null {
    return this.live === 0 ? null : this.items[this.items.length - 1]!;
  }

  add(node: T, at: number): void {
    if (at === this.items.length) {
      this.items.push(node);
      this.numbers.push(node.queued);
    } else {
      this.items.splice(at, 0, node);
      this.numbers.splice(at, 0, node.queued);
    }
    this.live++;
  }

  /** Drops dead entries from both ends; compacts when they outnumber the live ones. */
  trim(): void {
    while (this.start < this.items.length && !this.#alive(this.start)) this.start++;
    while (this.items.length > this.start && !this.#alive(this.items.length - 1)) {
      this.items.pop();
      this.numbers.pop();
    }
    const dead = this.items.length - this.start - this.live;
    // Amortized O(1): a copy only once the dropped entries are as many as the ones copied.
    const spent = this.start > 1024 && this.start * 2 > this.items.length;
    if (this.start === this.items.length || spent || (dead > 32 && dead > this.live)) this.#compact();
  }

  #compact(): void {
    const items: T[] = [];
    const numbers: number[] = [];
    for (let i = this.start; i < this.items.length; i++) {
      if (!this.#alive(i)) continue;
      items.push(this.items[i]!);
      numbers.push(this.numbers[i]!);
    }
    this.items = items;
    this.numbers = numbers;
    this.start = 0;
  }
}

export class WaitQueue<T extends QueueNode> {
  readonly #lists: [List<T>, List<T>, List<T>] = [new List(), new List(), new List()];
  /** Every waiter in enqueue order (enqueue times never decrease): the next deadline first. */
  readonly #byEnqueue = new List<T>();
  #size = 0;
  /** The last entry number given (never 0: 0 means "in no queue"). */
  #numbered = 0;

  get size(): number {
    return this.#size;
  }

  /** Waiters of own class `rank`. */
  count(rank: Rank): number {
    return this.#lists[rank].live;
  }

  /** The oldest waiter of own class `rank`. */
  head(rank: Rank): T | null {
    return this.#lists[rank].first;
  }

  /** The newest waiter of own class `rank`. */
  tail(rank: Rank): T | null {
    return this.#lists[rank].last;
  }

  /** The waiters of own class `rank`, oldest first. */
  *waiting(rank: Rank): Iterable<T> {
    const list = this.#lists[rank];
    for (let i = list.start; i < list.items.length; i++) {
      const n = list.items[i]!;
      if (n.queued === list.numbers[i]) yield n;
    }
  }

  /** The waiter that has waited longest in this queue (earliest enqueue): the next deadline. */
  get earliestEnqueued(): T | null {
    return this.#byEnqueue.first;
  }

  /**
   * Adds a waiter. Usually it arrived last and goes at the end; a re-acquire that keeps an
   * earlier arrival time (DESIGN §1.2) is placed by arrival, scanning from the end.
   */
  push(node: T): void {
    const list = this.#lists[node.rank];
    const items = list.items;
    let at = items.length;
    while (at > list.start && items[at - 1]!.arrivedAt > node.arrivedAt) at--;
    node.queued = ++this.#numbered;
    list.add(node, at);
    this.#byEnqueue.add(node, this.#byEnqueue.items.length);
    this.#size++;
  }

  /** Removes a waiter that is in this queue. */
  remove(node: T): void {
    node.queued = 0;
    const list = this.#lists[node.rank];
    list.live--;
    list.trim();
    this.#byEnqueue.live--;
    this.#byEnqueue.trim();
    this.#size--;
  }

  /** The waiter to serve next: highest effective class, then earliest arrival. */
  best(nowMs: number, agingMs: number): T | null {
    let best: T | null = null;
    let bestRank = 3;
    for (let r = 0; r < 3; r++) {
      const head = this.#lists[r]!.first;
      if (head === null) continue;
      const eff = effectiveRank(head.rank, head.arrivedAt, nowMs, agingMs);
      if (eff < bestRank || (eff === bestRank && best !== null && head.arrivedAt < best.arrivedAt)) {
        best = head;
        bestRank = eff;
      }
    }
    return best;
  }

  /** The newest waiter whose own class is below `rank`, lowest class first: who to shed. */
  newestBelow(rank: Rank): T | null {
    for (let r = 2; r > rank; r--) {
      const tail = this.#lists[r as Rank].last;
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
    for (let r = 0; r < node.rank; r++) position += this.#lists[r as Rank].live;
    const list = this.#lists[node.rank];
    for (let i = list.start; i < list.items.length; i++) {
      const n = list.items[i]!;
      if (n === node && n.queued === list.numbers[i]) break;
      if (n.queued === list.numbers[i]) position++;
    }
    return position;
  }

  /** Waiters that would be served before a new arrival of class `rank`, plus one. */
  positionForArrival(rank: Rank): number {
    let position = 1;
    for (let r = 0; r <= rank; r++) position += this.#lists[r as Rank].live;
    return position;
  }
}
