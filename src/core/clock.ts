/**
 * Time in sluice's core is an argument, never a global read (STYLE G2): the core asks an
 * injected `Clock`, and tests drive a `ManualClock` instead of sleeping.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale; only differences are meaningful. */
  now(): number;
  /**
   * Calls `fn` once when `now()` reaches `atMs`; returns a function that cancels it. The core
   * never calls this; the shell's one timer does, so a `ManualClock` drives it in tests.
   */
  setTimer(atMs: number, fn: () => void): () => void;
}

// Read once: a global lookup per clock read shows up on the uncontended acquire path.
const perf = globalThis.performance;

/** The reading this turn shares, or −1 before its first read. */
let turnNow = -1;
/** How many more reads may share `turnNow` before the clock is read again. */
let sharesLeft = 0;
const forgetTurnNow = (): void => {
  turnNow = -1;
};
/** At most this many reads share one reading (see `systemClock`). */
export const SHARED_READS = 64;

/**
 * The process's monotonic clock (`performance.now()`), immune to wall-clock jumps, in whole
 * milliseconds: integers stay small integers in V8, where fractional times would box a heap
 * number for each of a waiter's three timestamps (about 48 bytes per queued call).
 *
 * Read once per turn, within bounds: the first `now()` reads the clock and later ones get that
 * reading until Node next runs its `process.nextTick` queue — at the end of the callback that read
 * it, or of the microtask drain it was read in (V8 drains microtasks before Node runs ticks: a loop
 * of `await acquire()` and `release()` shares one reading) — or until it has served
 * `SHARED_READS` reads. A read costs ~60 ns here (a system call on this VM's kvm-clock), two per
 * acquire + release: half of an uncontended pair (docs/bench.md). The count is the bound: a
 * microtask drain can last as long as its code keeps awaiting settled promises — the benchmark
 * process ran one for 33 s — and with no bound every timestamp taken in it was that old: waiters
 * joined with deadlines already past and leases seemed held for 33 s, which inflated the drain
 * estimate until arrivals were refused as `expected_wait` (issue 13). Node's timers use libuv's
 * loop time, which stands still the same way, but only between callbacks.
 */
export const systemClock: Clock = {
  now() {
    if (turnNow < 0) {
      turnNow = Math.floor(perf.now());
      sharesLeft = SHARED_READS;
      process.nextTick(forgetTurnNow);
    } else if (--sharesLeft === 0) {
      turnNow = Math.floor(perf.now());
      sharesLeft = SHARED_READS;
    }
    return turnNow;
  },
  setTimer(atMs, fn) {
    // Node runs timers on libuv's cached whole-millisecond loop time, so a timeout can fire a
    // fraction of a millisecond before performance.now() reaches its due time; and on this
    // whole-millisecond clock a fractional `atMs` (a jittered cooldown's end) is reached only at
    // the next whole millisecond. So wait for that, and wait again if woken before it.
    const due = Math.ceil(atMs);
    const fire = (): void => {
      const left = due - perf.now();
      if (left > 0) handle = setTimeout(fire, left);
      else fn();
    };
    let handle = setTimeout(fire, Math.max(0, due - perf.now()));
    return () => clearTimeout(handle);
  },
};

interface Timer {
  at: number;
  fn: () => void;
  seq: number;
}

/**
 * A clock that moves only when told to: `advance(ms)` or `set(ms)`. Timers due on the way fire
 * in time order, each with `now()` set to its own due time, so a timeout is observed exactly.
 */
export class ManualClock implements Clock {
  #now: number;
  #timers: Timer[] = [];
  #seq = 0;

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimer(atMs: number, fn: () => void): () => void {
    const timer: Timer = { at: atMs, fn, seq: this.#seq++ };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  /** Timers not yet fired. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /** Moves time forward by `ms` (≥ 0), firing due timers on the way; returns the new time. */
  advance(ms: number): number {
    if (!(ms >= 0)) throw new RangeError(`ManualClock.advance expects ms ≥ 0, got ${ms}`);
    this.set(this.#now + ms);
    return this.#now;
  }

  /** Sets the time, firing due timers on the way; it never moves backwards. */
  set(ms: number): void {
    if (ms < this.#now) throw new RangeError(`ManualClock.set cannot go back from ${this.#now} to ${ms}`);
    for (;;) {
      let next: Timer | undefined;
      for (const t of this.#timers)
        if (t.at <= ms && (next === undefined || t.at < next.at || (t.at === next.at && t.seq < next.seq)))
          next = t;
      if (next === undefined) break;
      this.#timers = this.#timers.filter((t) => t !== next);
      if (next.at > this.#now) this.#now = next.at;
      next.fn();
    }
    this.#now = ms;
  }
}
