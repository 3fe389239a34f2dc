/**
 * The waiters of one lane (DESIGN §1.1): three FIFO lists, one per own class, each kept in
 * arrival order. Every operation the scheduler uses on the hot path is O(1) amortized: push,
 * remove, best head, newest lower-class waiter, earliest deadline. (Peers' lessons: cockatiel
 * drains with `Array#shift`, p-queue splices an array for priority; both degrade on a 100k
 * backlog.)
 *
 * The lists are arrays with a start index, not linked nodes: V8's scavenger discovers a linked
 * chain one node at a time, and a 100k backlog of linked waiters cost ~1.6× as much GC per
 * megabyte copied as the same waiters in an array (`bench/waiter-shape.ts`). A waiter's `queued`
 * field is its entry's index plus its list's base, so a removed waiter (`queued` 0) leaves a dead
 * entry that no later push can revive: a new entry has a new index. Dead entries are dropped when
 * they reach either end of their list, and a list compacts in place when they outnumber its
 * waiters, so a cancelled waiter is not kept for long.
 *
 * The best waiter is always one of the three heads: within one own class, the head arrived
 * first, so it has both the highest effective class and the earliest arrival. The earliest
 * deadline is a head too while every list is also in enqueue order — the usual case, as a new
 * arrival goes at the end with the latest enqueue time. A waiter placed by an earlier arrival
 * time (a re-acquire, a re-dispatch) breaks that, and from then until the queue empties a fourth
 * list keeps every waiter in enqueue order.
 */
import { effectiveRank, type Rank } from "./priority.js";

/** What a queue holds: the scheduler's ticket, reduced to the fields ordering needs. */
export interface QueueNode {
  rank: Rank;
  arrivedAt: number;
  enqueuedAt: number;
  /** Its entry's key while it is in a queue, 0 when it is in none (set by the queue). */
  queued: number;
}

/**
 * Where a list's keys start: room below for a base moved down by inserts near the front, above
 * for one moved up by compactions. Keys stay small integers (below 2^31 — a larger number would
 * box a heap number in each waiter), so outside [1, MAX_BASE) the list numbers from here again.
 */
const MID_BASE = 2 ** 29;
const MAX_BASE = 2 ** 30;

/**
 * Whether a list of `length` entries from `start` on, `live` of them live, is worth copying down:
 * once the dropped prefix is as long as what would be copied (amortized O(1)), or dead entries
 * outnumber the live ones (cancelled waiters are not kept for long).
 */
function worthCompacting(start: number, length: number, live: number): boolean {
  const dead = length - start - live;
  return (start > 1024 && start * 2 > length) || (dead > 32 && dead > live);
}

/** One class's list: entries from `start` on, in arrival order. */
class ClassList<T extends QueueNode> {
  items: T[] = [];
  start = 0;
  live = 0;

  /** An entry at index `i` is live while its waiter's key is `base + i` (never 0: "in no queue"). */
  base = MID_BASE;

  alive(i: number): boolean {
    return this.items[i]!.queued === this.base + i;
  }

  /** The first live entry (the list is trimmed, so it is the one at `start`). */
  get first(): T | null {
    return this.live === 0 ? null : this.items[this.start]!;
  }

  get last(): T | null {
    return this.live === 0 ? null : this.items[this.items.length - 1]!;
  }

  /**
   * Where a waiter that arrived at `arrivedAt` goes: after every entry that arrived no later. The
   * entries, dead ones included, are in arrival order: at the end without a look in the usual
   * case, else by binary search (a re-dispatched call that arrived long ago goes near the front).
   */
  placeOf(arrivedAt: number): number {
    const items = this.items;
    let lo = this.start;
    let hi = items.length;
    if (hi === lo || items[hi - 1]!.arrivedAt <= arrivedAt) return hi;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (items[mid]!.arrivedAt > arrivedAt) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  add(node: T, at: number): void {
    const items = this.items;
    if (at === items.length) items.push(node);
    else if (at - this.start < items.length - at && this.base + this.start > 1) {
      // Nearer the front: the entries behind it keep their keys under a base one lower, and the
      // ones before it follow — front to back, so a waiter's dead entry (always before its live
      // one) is looked at before the live one's key moves onto the dead one's.
      items.splice(at, 0, node);
      this.base--;
      for (let i = this.start; i < at; i++) {
        const n = items[i]!;
        if (n.queued === this.base + 1 + i) n.queued = this.base + i;
      }
    } else {
      items.splice(at, 0, node);
      // The entries behind it moved up one: their live waiters' keys follow. From the back, so a
      // waiter's dead entry is looked at before its live one moves onto the dead one's old key.
      for (let i = items.length - 1; i > at; i--) {
        const n = items[i]!;
        if (n.queued === this.base + i - 1) n.queued = this.base + i;
      }
    }
    node.queued = this.base + at;
    this.live++;
  }

  /**
   * Takes out the waiter whose key is `key`: dead entries reaching the end it was at are dropped,
   * and the list compacts when dead entries outnumber the live ones. Only that end is looked at —
   * in a long queue the other end's waiter is in memory nobody else touches now.
   */
  remove(node: T, key: number): void {
    node.queued = 0;
    this.live--;
    const items = this.items;
    const at = key - this.base;
    if (at === this.start) while (this.start < items.length && !this.alive(this.start)) this.start++;
    else if (at === items.length - 1)
      while (items.length > this.start && !this.alive(items.length - 1)) items.pop();
    if (this.start === items.length) {
      items.length = 0;
      this.start = 0;
      this.base = MID_BASE;
    } else if (worthCompacting(this.start, items.length, this.live)) this.#compact();
  }

  /** Moves the live entries to the front of the same array (no new array to grow and collect). */
  #compact(): void {
    const items = this.items;
    const from = this.start;
    this.start = 0;
    if (items.length - from === this.live && this.base + from < MAX_BASE) {
      // Only a served prefix is dead (a queue drained from the front): move the entries down and
      // the base up by as much, so each key still names its entry without touching its waiter —
      // in a long queue every waiter touched would be a cache miss.
      for (let i = from; i < items.length; i++) items[i - from] = items[i]!;
      items.length -= from;
      this.base += from;
      return;
    }
    const base = this.base;
    let j = 0;
    for (let i = from; i < items.length; i++) {
      const n = items[i]!;
      if (n.queued !== base + i) continue;
      n.queued = MID_BASE + j;
      items[j++] = n;
    }
    items.length = j;
    this.base = MID_BASE;
  }
}

/**
 * Every waiter in enqueue order, kept only while some class list is not. An entry is live while
 * its waiter is queued with the enqueue time the entry was made with: a waiter queued again later
 * has a new entry (and if queued again at the same time, its two entries name the same deadline).
 */
class EnqueueOrder<T extends QueueNode> {
  items: T[] = [];
  times: number[] = [];
  start = 0;
  live = 0;

  alive(i: number): boolean {
    const n = this.items[i]!;
    return n.queued !== 0 && n.enqueuedAt === this.times[i];
  }

  get first(): T | null {
    return this.live === 0 ? null : this.items[this.start]!;
  }

  /** Adds by enqueue time, after every entry enqueued no later (usually at the end). */
  add(node: T): void {
    const { items, times } = this;
    // In enqueue-time order, dead entries included: at the end, or by binary search.
    let at = items.length;
    if (at > this.start && times[at - 1]! > node.enqueuedAt) {
      let lo = this.start;
      while (lo < at) {
        const mid = (lo + at) >>> 1;
        if (times[mid]! > node.enqueuedAt) at = mid;
        else lo = mid + 1;
      }
    }
    if (at === items.length) {
      items.push(node);
      times.push(node.enqueuedAt);
    } else {
      items.splice(at, 0, node);
      times.splice(at, 0, node.enqueuedAt);
    }
    this.live++;
  }

  trim(): void {
    const { items, times } = this;
    while (this.start < items.length && !this.alive(this.start)) this.start++;
    while (items.length > this.start && !this.alive(items.length - 1)) {
      items.pop();
      times.pop();
    }
    if (worthCompacting(this.start, items.length, this.live)) {
      let j = 0;
      for (let i = this.start; i < items.length; i++) {
        if (!this.alive(i)) continue;
        items[j] = items[i]!;
        times[j++] = times[i]!;
      }
      items.length = j;
      times.length = j;
      this.start = 0;
    }
  }
}

export class WaitQueue<T extends QueueNode> {
  // A waiter is only ever queued in its own class's list (its class never changes), so the
  // lists may share keys.
  readonly #lists: [ClassList<T>, ClassList<T>, ClassList<T>] = [
    new ClassList(),
    new ClassList(),
    new ClassList(),
  ];
  /** Every waiter in enqueue order while some list is out of it; null while each list is in it. */
  #byEnqueue: EnqueueOrder<T> | null = null;
  #size = 0;

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
    for (let i = list.start; i < list.items.length; i++) if (list.alive(i)) yield list.items[i]!;
  }

  /** The waiter that has waited longest in this queue (earliest enqueue): the next deadline. */
  get earliestEnqueued(): T | null {
    if (this.#byEnqueue !== null) return this.#byEnqueue.first;
    let earliest: T | null = null;
    for (let r = 0; r < 3; r++) {
      const head = this.#lists[r]!.first;
      if (head !== null && (earliest === null || head.enqueuedAt < earliest.enqueuedAt)) earliest = head;
    }
    return earliest;
  }

  /**
   * Adds a waiter. Usually it arrived last and goes at the end; a re-acquire that keeps an
   * earlier arrival time (DESIGN §1.2) is placed by arrival, scanning from the end.
   */
  push(node: T): void {
    const list = this.#lists[node.rank];
    const at = list.placeOf(node.arrivedAt);
    if (this.#byEnqueue === null) {
      const tail = list.last;
      if (at < list.items.length || (tail !== null && tail.enqueuedAt > node.enqueuedAt))
        this.#byEnqueue = this.#enqueueOrder();
    }
    list.add(node, at);
    this.#byEnqueue?.add(node);
    this.#size++;
  }

  /** Removes a waiter that is in this queue. */
  remove(node: T): void {
    this.#lists[node.rank].remove(node, node.queued);
    this.#size--;
    if (this.#byEnqueue === null) return;
    // Empty, every list is in enqueue order again.
    if (this.#size === 0) this.#byEnqueue = null;
    else {
      this.#byEnqueue.live--;
      this.#byEnqueue.trim();
    }
  }

  /** The waiters so far in enqueue order: the three lists (each in that order) merged. */
  #enqueueOrder(): EnqueueOrder<T> {
    const order = new EnqueueOrder<T>();
    const all: T[] = [];
    for (let r = 0; r < 3; r++) for (const n of this.waiting(r as Rank)) all.push(n);
    all.sort((a, b) => a.enqueuedAt - b.enqueuedAt); // stable: a class's own order is kept
    for (const n of all) order.add(n);
    return order;
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
    for (const n of this.waiting(node.rank)) {
      if (n === node) break;
      position++;
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
