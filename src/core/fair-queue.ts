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
 * What an {@link IndexedHeap} orders: a flow's place in a queue, by virtual start tag, then turn
 * (`byTag`, index in `fairAt`), or by its oldest waiter's arrival, then enqueue time (index in
 * `oldAt`; copied onto the flow so a comparison never reads a waiter). Written out rather than
 * passed as callbacks: a grant sifts two heaps, and the indirect calls cost more than the
 * comparisons (a 100k push-and-drain over 100 flows: 50 → 26 ms).
 */
export interface HeapItem {
  vstart: number;
  turn: number;
  fairAt: number;
  headArrivedAt: number;
  headEnqueuedAt: number;
  oldAt: number;
}

/** A binary min-heap that keeps each item's index on the item (so any item can move or leave). */
export class IndexedHeap<S extends HeapItem> {
  readonly items: S[] = [];

  constructor(private readonly byTag: boolean) {}

  private before(a: S, b: S): boolean {
    if (this.byTag) return a.vstart < b.vstart || (a.vstart === b.vstart && a.turn < b.turn);
    return (
      a.headArrivedAt < b.headArrivedAt ||
      (a.headArrivedAt === b.headArrivedAt && a.headEnqueuedAt < b.headEnqueuedAt)
    );
  }

  private setIndex(s: S, at: number): void {
    if (this.byTag) s.fairAt = at;
    else s.oldAt = at;
  }

  private indexOf(s: S): number {
    return this.byTag ? s.fairAt : s.oldAt;
  }

  get size(): number {
    return this.items.length;
  }

  get top(): S | null {
    return this.items.length === 0 ? null : this.items[0]!;
  }

  has(s: S): boolean {
    return this.indexOf(s) >= 0;
  }

  insert(s: S): void {
    this.items.push(s);
    this.#up(this.items.length - 1, s);
  }

  /** `s` changed its key: moves it to its place. */
  update(s: S): void {
    const at = this.indexOf(s);
    if (at > 0 && this.before(s, this.items[(at - 1) >> 1]!)) this.#up(at, s);
    else this.#down(at, s);
  }

  remove(s: S): void {
    const at = this.indexOf(s);
    this.setIndex(s, -1);
    const last = this.items.pop()!;
    if (last === s) return;
    this.items[at] = last;
    this.setIndex(last, at);
    this.update(last);
  }

  /** Empties the heap (each item's index back to -1). */
  clear(): void {
    for (const s of this.items) this.setIndex(s, -1);
    this.items.length = 0;
  }

  #up(at: number, s: S): void {
    const items = this.items;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      const p = items[parent]!;
      if (!this.before(s, p)) break;
      items[at] = p;
      this.setIndex(p, at);
      at = parent;
    }
    items[at] = s;
    this.setIndex(s, at);
  }

  #down(at: number, s: S): void {
    const items = this.items;
    const n = items.length;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= n) break;
      if (child + 1 < n && this.before(items[child + 1]!, items[child]!)) child++;
      const c = items[child]!;
      if (!this.before(c, s)) break;
      items[at] = c;
      this.setIndex(c, at);
      at = child;
    }
    items[at] = s;
    this.setIndex(s, at);
  }
}

/** The backlogged flows of one class of one lane, by virtual start tag. */
export class FairQueue<S extends FlowState> {
  readonly #heap = new IndexedHeap<S>(true);
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
    if (s.fairAt >= 0) this.#heap.update(s);
  }

  /** Forgets every flow and virtual time (the class emptied: nobody is owed anything). */
  reset(): void {
    this.#heap.clear();
    this.#vnow = 0;
    this.#turns = 0;
    this.#weights = 0;
  }
}
