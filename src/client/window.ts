/**
 * The client's window (DESIGN §6): how many calls of one lane this client keeps outstanding at
 * the gateway, and the line of calls waiting for room in it.
 *
 * The gateway is the authority on its capacity: every refusal advertises the lane's width (what
 * it carries now) and queue limit (what it holds beyond that), and a window of width + queue
 * limit is exactly what the gateway can take without refusing. So the window starts there (it is
 * unbounded until the first advertisement: a burst sent before anything is known is how it is
 * learnt, and a refusal costs the gateway microseconds), is halved on a 429 as TCP halves its
 * congestion window on a loss (RFC 5681), and grows by one after each window's worth of
 * successes, never past the last advertised width + queue limit.
 *
 * One congestion event is one cut: a burst refused together would otherwise halve the window once
 * per refusal, down to 1. Each slot records the window's `epoch` when it was taken; a 429 on a
 * call sent before the last cut belongs to the event already answered (NewReno's recovery
 * point, RFC 6582), and only cuts when it was sent after it.
 *
 * No timers and no clock: the window moves on outcomes only, so it is tested without sleeping.
 */

/** A slot of the window, held from send until the answer's body has ended. */
export interface Slot {
  /** The window's cut epoch when the slot was taken. */
  readonly epoch: number;
}

/** How a call ended, as far as the window cares. */
export type SlotOutcome =
  /** Answered below 400: one more success toward the next +1. */
  | "success"
  /** A 429 (sluice's or the pod's): halve, once per congestion event. */
  | "congestion"
  /** Anything else (another status, a network error, an abort): the slot is given back, nothing learnt. */
  | "neutral";

/** The window's numbers, as plain data. */
export interface WindowSnapshot {
  /** Calls this client may keep outstanding; `null` while unbounded (nothing advertised yet). */
  size: number | null;
  /** The last advertised width + queue limit; `null` before the first. */
  ceiling: number | null;
  /** Calls sent and not yet ended. */
  inflight: number;
  /** Calls waiting here for room in the window (retries first). */
  queued: number;
  /** Cuts so far. */
  cuts: number;
}

interface Waiter {
  grant(slot: Slot): void;
  /** Set when its signal aborted: skipped when its turn comes. */
  gone: boolean;
}

/** A FIFO with O(1) push and shift (an array with a moving head, compacted as it empties). */
class Fifo<T> {
  #items: T[] = [];
  #head = 0;

  get size(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head++];
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }
}

export class ClientWindow {
  #size: number;
  #ceiling: number | undefined;
  #inflight = 0;
  #successes = 0;
  #epoch = 0;
  /** Calls sent again after a refusal: they have waited longest, so they go first. */
  readonly #retries = new Fifo<Waiter>();
  readonly #fresh = new Fifo<Waiter>();
  /** Waiters whose signal aborted and that still sit in a FIFO (so `queued` stays exact). */
  #gone = 0;

  /** @param initial calls allowed before the gateway has advertised anything. **Default:** unbounded. */
  constructor(initial = Number.POSITIVE_INFINITY) {
    this.#size = initial;
  }

  /** The window's numbers now. */
  snapshot(): WindowSnapshot {
    return {
      size: Number.isFinite(this.#size) ? this.#size : null,
      ceiling: this.#ceiling ?? null,
      inflight: this.#inflight,
      queued: this.#retries.size + this.#fresh.size - this.#gone,
      cuts: this.#epoch,
    };
  }

  /**
   * A slot now if the window has room and nobody waits, else a place in line. `retry` puts the
   * call ahead of first attempts. An abort while waiting rejects with `signal.reason`.
   */
  acquire(signal?: AbortSignal | null, retry = false): Promise<Slot> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#inflight < this.#size && this.#retries.size + this.#fresh.size === this.#gone) {
      return Promise.resolve(this.#take());
    }
    return new Promise<Slot>((resolve, reject) => {
      const onAbort = () => {
        waiter.gone = true;
        this.#gone++;
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        gone: false,
        grant: (slot) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(slot);
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      (retry ? this.#retries : this.#fresh).push(waiter);
    });
  }

  /**
   * What the gateway advertised (`X-Sluice-Width`, `X-Sluice-Queue-Limit`): the window's ceiling.
   * An unbounded window starts there; a larger one comes down to it.
   */
  advertise(width: number, queueLimit: number): void {
    if (!Number.isFinite(width) || !Number.isFinite(queueLimit) || width < 0 || queueLimit < 0) return;
    const ceiling = Math.max(1, width + queueLimit);
    this.#ceiling = ceiling;
    if (this.#size > ceiling) this.#size = ceiling;
    this.#pump();
  }

  /** Gives the slot back with what the call taught; the next waiters get the room. */
  release(slot: Slot, outcome: SlotOutcome): void {
    if (outcome === "congestion" && slot.epoch === this.#epoch) {
      // Halve from the window, or from what was outstanding while it was still unbounded.
      const base = Number.isFinite(this.#size) ? this.#size : this.#inflight;
      this.#size = Math.max(1, Math.floor(base / 2));
      this.#epoch++;
      this.#successes = 0;
    } else if (outcome === "success" && Number.isFinite(this.#size)) {
      // +1 per window of successes: one round trip's worth at the current size (additive increase).
      if (++this.#successes >= this.#size) {
        this.#successes = 0;
        this.#size = Math.min(this.#size + 1, this.#ceiling ?? Number.POSITIVE_INFINITY);
      }
    }
    this.#inflight--;
    this.#pump();
  }

  #take(): Slot {
    this.#inflight++;
    return { epoch: this.#epoch };
  }

  /** Grants waiters, retries first, while the window has room. */
  #pump(): void {
    while (this.#inflight < this.#size) {
      const waiter = this.#retries.shift() ?? this.#fresh.shift();
      if (waiter === undefined) return;
      if (waiter.gone) {
        this.#gone--;
        continue;
      }
      waiter.grant(this.#take());
    }
  }
}
