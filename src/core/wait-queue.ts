/**
 * The waiters of one lane (DESIGN §1.1): three intrusive FIFO lists, one per own class, each
 * kept in arrival order, plus one list in enqueue order for queue deadlines. Every operation
 * the scheduler uses on the hot path is O(1): push, remove, best head, newest lower-class waiter,
 * earliest deadline. (Peers' lessons: cockatiel drains with `Array#shift`, p-queue splices an
 * array for priority; both degrade on a 100k backlog.)
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
  prev: QueueNode | null;
  next: QueueNode | null;
  dprev: QueueNode | null;
  dnext: QueueNode | null;
}

export class WaitQueue<T extends QueueNode> {
  readonly #heads: [T | null, T | null, T | null] = [null, null, null];
  readonly #tails: [T | null, T | null, T | null] = [null, null, null];
  readonly #counts: [number, number, number] = [0, 0, 0];
  #dhead: T | null = null;
  #dtail: T | null = null;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Waiters of own class `rank`. */
  count(rank: Rank): number {
    return this.#counts[rank];
  }

  /** The oldest waiter of own class `rank`. */
  head(rank: Rank): T | null {
    return this.#heads[rank];
  }

  /** The newest waiter of own class `rank`. */
  tail(rank: Rank): T | null {
    return this.#tails[rank];
  }

  /** The waiter that has waited longest in this queue (earliest enqueue): the next deadline. */
  get earliestEnqueued(): T | null {
    return this.#dhead;
  }

  /**
   * Adds a waiter. Usually it arrived last and goes at the tail; a re-acquire that keeps an
   * earlier arrival time (DESIGN §1.2) is placed by arrival, scanning from the tail.
   */
  push(node: T): void {
    const rank = node.rank;
    let after = this.#tails[rank];
    while (after !== null && after.arrivedAt > node.arrivedAt) after = after.prev as T | null;
    node.prev = after;
    node.next = after === null ? this.#heads[rank] : after.next;
    if (node.next !== null) node.next.prev = node;
    else this.#tails[rank] = node;
    if (after !== null) after.next = node;
    else this.#heads[rank] = node;
    this.#counts[rank]++;
    this.#size++;
    // Enqueue times never decrease (the clock is monotonic), so appending keeps this list sorted.
    node.dnext = null;
    node.dprev = this.#dtail;
    if (this.#dtail !== null) this.#dtail.dnext = node;
    else this.#dhead = node;
    this.#dtail = node;
  }

  /** Removes a waiter that is in this queue. */
  remove(node: T): void {
    const rank = node.rank;
    if (node.prev !== null) node.prev.next = node.next;
    else this.#heads[rank] = node.next as T | null;
    if (node.next !== null) node.next.prev = node.prev;
    else this.#tails[rank] = node.prev as T | null;
    if (node.dprev !== null) node.dprev.dnext = node.dnext;
    else this.#dhead = node.dnext as T | null;
    if (node.dnext !== null) node.dnext.dprev = node.dprev;
    else this.#dtail = node.dprev as T | null;
    node.prev = node.next = node.dprev = node.dnext = null;
    this.#counts[rank]--;
    this.#size--;
  }

  /** The waiter to serve next: highest effective class, then earliest arrival. */
  best(nowMs: number, agingMs: number): T | null {
    let best: T | null = null;
    let bestRank = 3;
    for (let r = 0; r < 3; r++) {
      const head = this.#heads[r as Rank];
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
      const tail = this.#tails[r as Rank];
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
    for (let r = 0; r < node.rank; r++) position += this.#counts[r as Rank];
    for (let n = node.prev; n !== null; n = n.prev) position++;
    return position;
  }

  /** Waiters that would be served before a new arrival of class `rank`, plus one. */
  positionForArrival(rank: Rank): number {
    let position = 1;
    for (let r = 0; r <= rank; r++) position += this.#counts[r as Rank];
    return position;
  }
}
