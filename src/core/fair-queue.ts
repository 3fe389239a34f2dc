/**
 * Weighted fair queuing between flows (issue 24): start-time fair queuing (Goyal et al., SFQ)
 * with one unit of service per grant. A flow is a client key, or the tenant that groups keys;
 * each waits in its own FIFO and is served in proportion to its weight.
 *
 * Each backlogged flow carries the virtual start tag of its next waiter. The flow with the
 * smallest tag goes next; serving it moves the virtual clock to that tag and its next waiter
 * starts `1 / weight` later, so over any stretch where flows stay backlogged each gets grants in
 * proportion to its weight (within one grant per flow). A flow that comes back after being idle
 * starts at the virtual clock, never below it: idle time earns no credit to spend later in a
 * burst, and its next waiter is at most about one round away — one call's service time at the
 * lane's rate. A flow alone is served on every grant (work-conserving: nothing waits for a share
 * nobody claims). Ties go to the flow that took its tag first, so equal weights take turns.
 *
 * O(log flows) per join, leave and grant (a binary heap with each flow's index stored on it).
 */

/** A flow: one key's (or one tenant's) waiters, sharing a class by `weight` (> 0). */
export interface Flow {
  readonly name: string;
  weight: number;
}

/** Calls with no flow: one flow of weight 1 between them. */
export const ANONYMOUS: Flow = Object.freeze({ name: "", weight: 1 }) as Flow;

/** A flow's place in one queue: what the fair queue reads and writes on it. */
export interface FlowState extends HeapItem {
  readonly flow: Flow;
  /** The virtual start tag of the flow's next waiter. */
  vstart: number;
  /** Which of equal tags goes first: the order in which flows took them. */
  turn: number;
  /** Its index in the fair queue's heap while backlogged, -1 otherwise. */
  fairAt: number;
}

/**
 * What the two flow heaps order: a flow's place in a queue, by virtual start tag, then turn
 * ({@link TagHeap}, index in `fairAt`), or by its oldest waiter's arrival, then enqueue time
 * ({@link OldestHeap}, index in `oldAt`; copied onto the flow so a comparison never reads a waiter).
 */
export interface HeapItem {
  vstart: number;
  turn: number;
  fairAt: number;
  headArrivedAt: number;
  headEnqueuedAt: number;
  oldAt: number;
}

/*
 * The two heaps are binary min-heaps that keep each item's index on the item (so any item can
 * move or leave), and each position's two keys in typed arrays beside the items: a sift compares
 * numbers in two flat arrays instead of reading fields off flows scattered in memory, and each is
 * written out for its own fields rather than one heap told which order to keep (a grant sifts
 * both; a shared heap's branch on the order and its indirect index writes cost as much as the
 * comparisons). The keys are copied when an item is placed, so an item's fields must not change
 * while it is in a heap except through `sink` or `update`.
 */

/** Flows by virtual start tag, then turn (the fair queue's order); each item's index in `fairAt`. */
export class TagHeap<S extends HeapItem> {
  readonly items: S[] = [];
  /** Each position's keys: its item's `vstart` and `turn`, copied when the item is placed. */
  #k1 = new Float64Array(16);
  #k2 = new Float64Array(16);

  get size(): number {
    return this.items.length;
  }

  get top(): S | null {
    return this.items.length === 0 ? null : this.items[0]!;
  }

  insert(s: S): void {
    const at = this.items.length;
    if (at === this.#k1.length) this.#grow();
    this.items.push(s);
    this.#up(at, s, s.vstart, s.turn);
  }

  /** `s`'s tag grew (it was served): it can only move down. */
  sink(s: S): void {
    this.#down(s.fairAt, s, s.vstart, s.turn);
  }

  remove(s: S): void {
    const at = s.fairAt;
    s.fairAt = -1;
    const last = this.items.pop()!;
    if (last === s) return;
    this.#place(at, last, last.vstart, last.turn);
  }

  /** Empties the heap (each item's index back to -1). */
  clear(): void {
    for (const s of this.items) s.fairAt = -1;
    this.items.length = 0;
  }

  /** Puts `s`, keys `a`, `b`, at its place from `at` (up or down). */
  #place(at: number, s: S, a: number, b: number): void {
    if (at > 0) {
      const parent = (at - 1) >> 1;
      const pa = this.#k1[parent]!;
      if (a < pa || (a === pa && b < this.#k2[parent]!)) {
        this.#up(at, s, a, b);
        return;
      }
    }
    this.#down(at, s, a, b);
  }

  #up(at: number, s: S, a: number, b: number): void {
    const items = this.items;
    const k1 = this.#k1;
    const k2 = this.#k2;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      const pa = k1[parent]!;
      if (a > pa || (a === pa && b >= k2[parent]!)) break;
      const p = items[parent]!;
      items[at] = p;
      p.fairAt = at;
      k1[at] = pa;
      k2[at] = k2[parent]!;
      at = parent;
    }
    items[at] = s;
    s.fairAt = at;
    k1[at] = a;
    k2[at] = b;
  }

  #down(at: number, s: S, a: number, b: number): void {
    const items = this.items;
    const k1 = this.#k1;
    const k2 = this.#k2;
    const n = items.length;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= n) break;
      let ca = k1[child]!;
      if (child + 1 < n) {
        const ra = k1[child + 1]!;
        if (ra < ca || (ra === ca && k2[child + 1]! < k2[child]!)) {
          child++;
          ca = ra;
        }
      }
      if (a < ca || (a === ca && b <= k2[child]!)) break;
      const c = items[child]!;
      items[at] = c;
      c.fairAt = at;
      k1[at] = ca;
      k2[at] = k2[child]!;
      at = child;
    }
    items[at] = s;
    s.fairAt = at;
    k1[at] = a;
    k2[at] = b;
  }

  #grow(): void {
    const k1 = new Float64Array(this.#k1.length * 2);
    const k2 = new Float64Array(this.#k2.length * 2);
    k1.set(this.#k1);
    k2.set(this.#k2);
    this.#k1 = k1;
    this.#k2 = k2;
  }
}

/** Flows by their oldest waiter's arrival, then enqueue time; each item's index in `oldAt`. */
export class OldestHeap<S extends HeapItem> {
  readonly items: S[] = [];
  /** Each position's keys: its item's `headArrivedAt` and `headEnqueuedAt`, copied when the item is placed. */
  #k1 = new Float64Array(16);
  #k2 = new Float64Array(16);

  get size(): number {
    return this.items.length;
  }

  get top(): S | null {
    return this.items.length === 0 ? null : this.items[0]!;
  }

  insert(s: S): void {
    const at = this.items.length;
    if (at === this.#k1.length) this.#grow();
    this.items.push(s);
    this.#up(at, s, s.headArrivedAt, s.headEnqueuedAt);
  }

  /** `s`'s oldest waiter changed: moves it to its place. */
  update(s: S): void {
    this.#place(s.oldAt, s, s.headArrivedAt, s.headEnqueuedAt);
  }

  remove(s: S): void {
    const at = s.oldAt;
    s.oldAt = -1;
    const last = this.items.pop()!;
    if (last === s) return;
    this.#place(at, last, last.headArrivedAt, last.headEnqueuedAt);
  }

  /** Empties the heap (each item's index back to -1). */
  clear(): void {
    for (const s of this.items) s.oldAt = -1;
    this.items.length = 0;
  }

  /** Puts `s`, keys `a`, `b`, at its place from `at` (up or down). */
  #place(at: number, s: S, a: number, b: number): void {
    if (at > 0) {
      const parent = (at - 1) >> 1;
      const pa = this.#k1[parent]!;
      if (a < pa || (a === pa && b < this.#k2[parent]!)) {
        this.#up(at, s, a, b);
        return;
      }
    }
    this.#down(at, s, a, b);
  }

  #up(at: number, s: S, a: number, b: number): void {
    const items = this.items;
    const k1 = this.#k1;
    const k2 = this.#k2;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      const pa = k1[parent]!;
      if (a > pa || (a === pa && b >= k2[parent]!)) break;
      const p = items[parent]!;
      items[at] = p;
      p.oldAt = at;
      k1[at] = pa;
      k2[at] = k2[parent]!;
      at = parent;
    }
    items[at] = s;
    s.oldAt = at;
    k1[at] = a;
    k2[at] = b;
  }

  #down(at: number, s: S, a: number, b: number): void {
    const items = this.items;
    const k1 = this.#k1;
    const k2 = this.#k2;
    const n = items.length;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= n) break;
      let ca = k1[child]!;
      if (child + 1 < n) {
        const ra = k1[child + 1]!;
        if (ra < ca || (ra === ca && k2[child + 1]! < k2[child]!)) {
          child++;
          ca = ra;
        }
      }
      if (a < ca || (a === ca && b <= k2[child]!)) break;
      const c = items[child]!;
      items[at] = c;
      c.oldAt = at;
      k1[at] = ca;
      k2[at] = k2[child]!;
      at = child;
    }
    items[at] = s;
    s.oldAt = at;
    k1[at] = a;
    k2[at] = b;
  }

  #grow(): void {
    const k1 = new Float64Array(this.#k1.length * 2);
    const k2 = new Float64Array(this.#k2.length * 2);
    k1.set(this.#k1);
    k2.set(this.#k2);
    this.#k1 = k1;
    this.#k2 = k2;
  }
}

/** The backlogged flows of one class of one lane, by virtual start tag. */
export class FairQueue<S extends FlowState> {
  readonly #heap = new TagHeap<S>();
  /** Virtual time: the start tag of the last waiter served. */
  #vnow = 0;
  #turns = 0;
  /** The weights of the backlogged flows added up (each as it was when it joined). */
  #weights = 0;

  /** Virtual time now (the start tag of the last waiter served). */
  get vnow(): number {
    return this.#vnow;
  }

  /** Flows with waiters. */
  get size(): number {
    return this.#heap.size;
  }

  /** The weights of the backlogged flows, added up. */
  get backloggedWeight(): number {
    return this.#weights;
  }

  /** The flow to serve next: the smallest start tag. */
  get next(): S | null {
    return this.#heap.top;
  }

  /** Backlogged flows, in no order. */
  get flows(): readonly S[] {
    return this.#heap.items;
  }

  /** `s` got its first waiter: it starts no earlier than virtual now (idle time earns no credit). */
  join(s: S): void {
    if (s.vstart < this.#vnow) s.vstart = this.#vnow;
    s.turn = this.#turns++;
    this.#weights += s.flow.weight;
    this.#heap.insert(s);
  }

  /** `s` has no waiters left. Its tag is kept: a flow served ahead of virtual time stays ahead. */
  leave(s: S): void {
    this.#heap.remove(s);
    this.#weights -= s.flow.weight;
    if (this.#heap.size === 0) this.#weights = 0; // no drift from weights changed while backlogged
  }

  /**
   * `s`'s next waiter is being served: virtual time moves to its tag, and the flow's following
   * waiter starts one grant's worth later, `1 / (weight × portion)`. `portion` (0..1, default 1)
   * is the part of the flow's weight this queue serves: with a fleet store, a flow waiting on k
   * replicas is served 1/k of its weight on each (store/redis/flow-advert.ts). The caller then
   * takes the waiter out (its flow moves to its new place, or leaves).
   */
  charge(s: S, portion = 1): void {
    if (s.vstart > this.#vnow) this.#vnow = s.vstart;
    s.vstart += 1 / (s.flow.weight * portion);
    s.turn = this.#turns++;
    if (s.fairAt >= 0) this.#heap.sink(s);
  }

  /** Forgets every flow and virtual time (the class emptied: nobody is owed anything). */
  reset(): void {
    this.#heap.clear();
    this.#vnow = 0;
    this.#turns = 0;
    this.#weights = 0;
  }
}
