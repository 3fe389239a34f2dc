/**
 * One class's waiters in one lane (wait-queue.ts), shared between flows by weight (fair-queue.ts).
 *
 * Until a waiter with a flow (a configured key) joins the class, there is one list in arrival
 * order — the anonymous flow — and every answer is that list's, at its cost: the default path
 * is the queue it always was. From the first flowed waiter on, each flow has its own list in
 * arrival order (FIFO within a flow), the fair queue orders the backlogged flows by virtual start
 * tag (`next`: who to serve), and a second heap orders them by their oldest waiter (`first`: the
 * class's oldest, for aging and deadlines). Both are O(log flows) per change. When the class
 * empties, the flows are forgotten: nobody is backlogged, so nobody is owed a turn.
 */
import { ClassList, type QueueNode } from "./arrival-list.js";
import { ANONYMOUS, FairQueue, type Flow, type FlowState, OldestHeap } from "./fair-queue.js";

/** One flow's waiters of one class, in arrival order, with its place in the fair queue. */
class FlowList<T extends QueueNode> extends ClassList<T> implements FlowState {
  vstart = 0;
  turn = 0;
  fairAt = -1;
  /** Its index in the oldest-waiter heap while it has waiters, -1 otherwise. */
  oldAt = -1;
  /** When its newest waiter was pushed (the class's push count): ties in arrival go to the later push. */
  tailPush = 0;
  /**
   * Its oldest waiter's arrival and enqueue times, kept here while it has waiters: the heap
   * compares flows without reading each flow's oldest waiter, which in a long queue is memory
   * nobody else touches now.
   */
  headArrivedAt = 0;
  headEnqueuedAt = 0;

  /** Copies the oldest waiter's times (call after the head changed). */
  noteHead(): void {
    const head = this.first!;
    this.headArrivedAt = head.arrivedAt;
    this.headEnqueuedAt = head.enqueuedAt;
  }

  constructor(readonly flow: Flow) {
    super();
  }
}

export class ClassQueue<T extends QueueNode> {
  /** Waiters with no flow (the only list until a flowed waiter comes). */
  readonly anon = new FlowList<T>(ANONYMOUS);
  /** The other flows' lists; null until the class first sees a flowed waiter. */
  #byFlow: Map<Flow, FlowList<T>> | null = null;
  #fair: FairQueue<FlowList<T>> | null = null;
  #oldest: OldestHeap<FlowList<T>> | null = null;
  /**
   * The latest arrival and enqueue time pushed since the class last emptied (flows only): a push
   * before either breaks the class's enqueue order, as an insert before the end does for one list.
   */
  #maxArrived = Number.NEGATIVE_INFINITY;
  #maxEnqueued = Number.NEGATIVE_INFINITY;
  live = 0;
  #pushes = 0;
  /**
   * The part of each flow's weight this replica serves here, for flows that wait on other
   * replicas of a fleet too (absent: 1); null when none does. Set from the fleet's answer.
   */
  #portions: ReadonlyMap<Flow, number> | null = null;
  /** The waiter `charge` was last called for, and its list, until its removal. */
  #charged: T | null = null;
  #chargedList: FlowList<T> | null = null;

  /** Whether flows share this class now (else only the anonymous list is used). */
  get flowing(): boolean {
    return this.#byFlow !== null;
  }

  /** The class's oldest waiter (earliest arrival). */
  get first(): T | null {
    if (this.#oldest === null) return this.anon.first;
    const top = this.#oldest.top;
    return top === null ? null : top.first;
  }

  /** The class's newest waiter (latest arrival): who to shed. O(flows) while flows share it. */
  get last(): T | null {
    if (this.#fair === null) return this.anon.last;
    let newest: FlowList<T> | null = null;
    for (const list of this.#fair.flows) {
      const d = newest === null ? 1 : list.last!.arrivedAt - newest.last!.arrivedAt;
      if (d > 0 || (d === 0 && list.tailPush > newest!.tailPush)) newest = list;
    }
    return newest === null ? null : newest.last;
  }

  /** The waiter the class serves next: its fair flow's oldest. */
  get next(): T | null {
    if (this.#fair === null) return this.anon.first;
    const flow = this.#fair.next;
    return flow === null ? null : flow.first;
  }

  /** The waiters of flow `flow` here (0 when it has none). */
  countOf(flow: Flow | null | undefined): number {
    if (flow === null || flow === undefined || flow === ANONYMOUS) return this.anon.live;
    return this.#byFlow?.get(flow)?.live ?? 0;
  }

  /** The weights of the flows with waiters here, added up (1 while only the anonymous flow is used). */
  get backloggedWeight(): number {
    return this.#fair === null ? 1 : this.#fair.backloggedWeight;
  }

  /**
   * Adds `node` to its flow's list. Returns true when the class may no longer be in enqueue
   * order (the queue then keeps a separate enqueue-order list, wait-queue.ts).
   */
  add(node: T): boolean {
    const list = this.#listOf(node.flow);
    const at = list.placeOf(node.arrivedAt);
    let broken: boolean;
    if (this.#fair === null) {
      const tail = list.last;
      broken = at < list.items.length || (tail !== null && tail.enqueuedAt > node.enqueuedAt);
    } else {
      broken = node.arrivedAt < this.#maxArrived || node.enqueuedAt < this.#maxEnqueued;
      if (node.arrivedAt > this.#maxArrived) this.#maxArrived = node.arrivedAt;
      if (node.enqueuedAt > this.#maxEnqueued) this.#maxEnqueued = node.enqueuedAt;
    }
    const joins = list.live === 0;
    list.add(node, at);
    this.live++;
    if (list.last === node) list.tailPush = ++this.#pushes;
    if (this.#fair !== null) {
      if (joins) {
        list.noteHead();
        this.#fair.join(list);
        this.#oldest!.insert(list);
      } else if (list.first === node) {
        list.noteHead();
        this.#oldest!.update(list);
      }
    }
    return broken;
  }

  /** Takes out `node`, which is in this class. */
  remove(node: T): void {
    const list = node === this.#charged ? this.#chargedList! : this.#listHolding(node);
    this.#charged = null;
    this.#chargedList = null;
    const wasFirst = list.first === node;
    list.remove(node, node.queued);
    this.live--;
    if (this.#fair === null) return;
    if (this.live === 0) this.#forget();
    else if (list.live === 0) {
      this.#fair.leave(list);
      this.#oldest!.remove(list);
    } else if (wasFirst) {
      list.noteHead();
      this.#oldest!.update(list);
    }
  }

  /** `node`, its flow's oldest, is about to be served: its flow pays for the grant (fair-queue.ts). */
  charge(node: T): void {
    if (this.#fair === null) return;
    // Usually the fair choice: its list is the fair queue's next, no lookup by flow.
    const next = this.#fair.next;
    const list = next !== null && next.first === node ? next : this.#listHolding(node);
    this.#fair.charge(list, this.#portions?.get(list.flow) ?? 1);
    this.#charged = node; // the removal that follows finds its list here
    this.#chargedList = list;
  }

  /** Sets the part of each flow's weight served here (flows absent from `portions`: all of it). */
  setPortions(portions: ReadonlyMap<Flow, number>): void {
    this.#portions = portions.size === 0 ? null : portions;
  }

  /** The flows with waiters here and how many each has (the anonymous flow as `ANONYMOUS`). */
  *flowCounts(): Iterable<[Flow, number]> {
    if (this.#fair === null) {
      if (this.anon.live > 0) yield [ANONYMOUS, this.anon.live];
      return;
    }
    for (const list of this.#fair.flows) yield [list.flow, list.live];
  }

  /** Every waiter, oldest first (O(n log n) while flows share the class). */
  *waiting(): Iterable<T> {
    if (this.#fair === null) {
      const list = this.anon;
      for (let i = list.start; i < list.items.length; i++) if (list.alive(i)) yield list.items[i]!;
      return;
    }
    const all: T[] = [];
    for (const list of this.#fair.flows)
      for (let i = list.start; i < list.items.length; i++) if (list.alive(i)) all.push(list.items[i]!);
    all.sort((a, b) => a.arrivedAt - b.arrivedAt || a.enqueuedAt - b.enqueuedAt);
    yield* all;
  }

  /** Waiters of this class that arrived before `node` (O(n) while flows share the class). */
  countBefore(node: T): number {
    let n = 0;
    if (this.#fair === null) {
      for (const w of this.waiting()) {
        if (w === node) break;
        n++;
      }
      return n;
    }
    for (const w of this.waiting()) if (w !== node && w.arrivedAt <= node.arrivedAt) n++;
    return n;
  }

  /**
   * The list `node` is in: its flow's, unless a reload moved its key to another flow (a tenant
   * named or dropped) while it waited — then the one whose entry holds it, found by looking.
   */
  #listHolding(node: T): FlowList<T> {
    const list = this.#listOf(node.flow);
    if (this.#byFlow === null || list.holds(node)) return list;
    if (this.anon.holds(node)) return this.anon;
    for (const other of this.#byFlow.values()) if (other.holds(node)) return other;
    return list;
  }

  #listOf(flow: Flow | null | undefined): FlowList<T> {
    if (flow === null || flow === undefined || flow === ANONYMOUS) return this.anon;
    if (this.#byFlow === null) this.#startFlows();
    let list = this.#byFlow!.get(flow);
    if (list === undefined) {
      list = new FlowList<T>(flow);
      this.#byFlow!.set(flow, list);
    }
    return list;
  }

  /** A flowed waiter joins: from now on the anonymous list is one flow among others. */
  #startFlows(): void {
    this.#byFlow = new Map();
    this.#fair = new FairQueue();
    this.#oldest = new OldestHeap<FlowList<T>>();
    const tail = this.anon.last;
    if (tail !== null) {
      this.#maxArrived = tail.arrivedAt;
      this.#maxEnqueued = tail.enqueuedAt;
      this.anon.noteHead();
      this.#fair.join(this.anon);
      this.#oldest.insert(this.anon);
    }
  }

  /** The class emptied: every flow and the virtual clock start over (nobody is owed a turn). */
  #forget(): void {
    this.#fair!.reset();
    this.#oldest!.clear();
    this.#byFlow!.clear();
    this.anon.vstart = 0;
    this.#maxArrived = Number.NEGATIVE_INFINITY;
    this.#maxEnqueued = Number.NEGATIVE_INFINITY;
  }
}
