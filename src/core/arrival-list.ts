/**
 * The two lists a lane's queue is made of (wait-queue.ts): a list of waiters in arrival order
 * with O(1) amortized push at the end and removal from anywhere (`ClassList`: one per class, or
 * one per flow and class once flows share a class, fair-queue.ts), and the enqueue-order list
 * kept only while arrival order and enqueue order disagree (`EnqueueOrder`).
 */
import type { Flow } from "./fair-queue.js";
import type { Rank } from "./priority.js";

/** What a queue holds: the scheduler's ticket, reduced to the fields ordering needs. */
export interface QueueNode {
  rank: Rank;
  arrivedAt: number;
  enqueuedAt: number;
  /** Its entry's key while it is in a queue, 0 when it is in none (set by the queue). */
  queued: number;
  /** The flow (key or tenant) it shares its class by; none: the anonymous flow of weight 1. */
  readonly flow?: Flow | null;
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
export function worthCompacting(start: number, length: number, live: number): boolean {
  const dead = length - start - live;
  return (start > 1024 && start * 2 > length) || (dead > 32 && dead > live);
}

/** One class's list: entries from `start` on, in arrival order. */
export class ClassList<T extends QueueNode> {
  items: T[] = [];
  start = 0;
  live = 0;

  /** An entry at index `i` is live while its waiter's key is `base + i` (never 0: "in no queue"). */
  base = MID_BASE;

  alive(i: number): boolean {
    return this.items[i]!.queued === this.base + i;
  }

  /** Whether `node` is live in this list (its key names an entry of this list holding it). */
  holds(node: T): boolean {
    const at = node.queued - this.base;
    return at >= this.start && at < this.items.length && this.items[at] === node;
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
export class EnqueueOrder<T extends QueueNode> {
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
