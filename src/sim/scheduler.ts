/**
 * vLLM's admission in miniature: at most `maxNumSeqs` sequences run, the rest wait in arrival
 * order, and what arrives past the waiting bound is an overflow for the server to act on.
 * `maxRunningSeen` is what gateway tests assert the upstream was never pushed above, so every
 * change of `running` goes through `#grant` and `end` — which is also where the busy-slot time
 * (utilization) is integrated and the machine's memory (OOM) is told.
 */

/** Where a sequence is. `done` is terminal; `end()` on a done sequence is a no-op. */
export type SeqState = "new" | "waiting" | "running" | "done";

/** A unit of work the scheduler links into its waiting list (intrusive, for O(1) removal). */
export interface Seq {
  state: SeqState;
  prev: Seq | null;
  next: Seq | null;
  /** Called once when the sequence gets a slot: synchronously from `admit` or later from `end`. */
  onGrant(): void;
}

/** Told of every sequence that starts or stops running (the machine's memory counts them). */
export interface RunListener {
  started(): void;
  stopped(): void;
}

const NO_LISTENER: RunListener = { started() {}, stopped() {} };

/** Running/waiting counters and the FIFO of waiters. */
export class SeqScheduler {
  /** Sequences holding a slot. */
  running = 0;
  /** Sequences waiting for one. */
  waiting = 0;
  /** Highest `running` since construction or the last `resetPeaks()`: exact, never sampled. */
  maxRunningSeen = 0;
  /** Highest `waiting` since construction or the last `resetPeaks()`. */
  maxWaitingSeen = 0;
  /** Highest `running + waiting` (what the clients had in flight here) since construction or `resetPeaks()`. */
  maxInflightSeen = 0;
  #busyMs = 0;
  #lastChangeMs: number;
  #head: Seq | null = null;
  #tail: Seq | null = null;
  // Set while the grant loop runs: a sequence that ends synchronously inside onGrant (service
  // time 0) must not start a nested loop, or a long queue would recurse once per waiter.
  #pumping = false;

  constructor(
    /** Slots; raising it grants waiters on the next `pump()`, lowering it lets running ones drain. */
    public maxNumSeqs: number,
    readonly listener: RunListener = NO_LISTENER,
    /** Milliseconds, for the busy-slot integral only; never decides anything. */
    readonly now: () => number = () => performance.now(),
  ) {
    this.#lastChangeMs = now();
  }

  /** Slot-milliseconds spent running since construction: ∫ running dt. Utilization is its rate ÷ `maxNumSeqs`. */
  busySlotMs(): number {
    return this.#busyMs + this.running * (this.now() - this.#lastChangeMs);
  }

  /**
   * Takes `seq` in: grants a slot now (calling `onGrant`) when one is free and nobody waits,
   * else queues it when `mayWait` says the waiting list has room. Returns false (and leaves
   * `seq` untouched) when it is an overflow.
   */
  admit(seq: Seq, mayWait: (waiting: number) => boolean): boolean {
    if (this.running < this.maxNumSeqs && this.#head === null) {
      this.#grant(seq);
      this.#peakInflight();
      return true;
    }
    if (!mayWait(this.waiting)) return false;
    seq.state = "waiting";
    seq.prev = this.#tail;
    seq.next = null;
    if (this.#tail === null) this.#head = seq;
    else this.#tail.next = seq;
    this.#tail = seq;
    if (++this.waiting > this.maxWaitingSeen) this.maxWaitingSeen = this.waiting;
    this.#peakInflight();
    return true;
  }

  /** Ends `seq` wherever it is (running: frees its slot; waiting: unlinks it). Idempotent. */
  end(seq: Seq): void {
    if (seq.state === "running") {
      seq.state = "done";
      this.#accrue();
      this.running--;
      this.listener.stopped();
      this.pump();
    } else if (seq.state === "waiting") {
      seq.state = "done";
      this.#unlink(seq);
    } else {
      seq.state = "done";
    }
  }

  /** Grants free slots to the oldest waiters. */
  pump(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.running < this.maxNumSeqs && this.#head !== null) {
        const seq = this.#head;
        this.#unlink(seq);
        this.#grant(seq);
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Restarts the peaks from the current counts (for `resetStats`). */
  resetPeaks(): void {
    this.maxRunningSeen = this.running;
    this.maxWaitingSeen = this.waiting;
    this.maxInflightSeen = this.running + this.waiting;
  }

  #grant(seq: Seq): void {
    seq.state = "running";
    this.#accrue();
    if (++this.running > this.maxRunningSeen) this.maxRunningSeen = this.running;
    this.listener.started();
    seq.onGrant();
  }

  #accrue(): void {
    const now = this.now();
    this.#busyMs += this.running * (now - this.#lastChangeMs);
    this.#lastChangeMs = now;
  }

  #peakInflight(): void {
    const n = this.running + this.waiting;
    if (n > this.maxInflightSeen) this.maxInflightSeen = n;
  }

  #unlink(seq: Seq): void {
    if (seq.prev === null) this.#head = seq.next;
    else seq.prev.next = seq.next;
    if (seq.next === null) this.#tail = seq.prev;
    else seq.next.prev = seq.prev;
    seq.prev = seq.next = null;
    this.waiting--;
  }
}
