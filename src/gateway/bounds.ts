/**
 * The gateway's own bounds, counted here and not in the Governor:
 *
 * - {@link GatewayBound}: requests past pre-body admission and not yet ended, at most
 *   `admission.max_concurrency + max_queued`. It is what makes a flood of uploads cheap to refuse
 *   (a 429 before any body byte is read), and what `drain()` waits on.
 * - {@link BufferBudget}: request body bytes held in memory by every request together
 *   (`admission.max_buffered_bytes`).
 *
 * The gateway bound is the only piece of admission the gateway decides by itself; it is kept
 * behind this one object (take at admission, give at settle, `refusal()` when full, `whenIdle()`
 * for drain) so that it can become one more budget on the call's path in the core, with a
 * Retry-After from the drain rate, without touching the phases.
 */
import { QueueFullError } from "../core/errors.js";
import { MIN_RETRY_AFTER_MS } from "../core/retry-after.js";

/** Requests admitted by the gateway and not yet ended. */
export class GatewayBound {
  #admitted = 0;
  /** Set while someone waits for zero (drain). */
  #idle: { promise: Promise<void>; resolve: () => void } | null = null;

  constructor(
    /** `admission.max_concurrency`: the in-flight part (also the Governor's "gateway" group). */
    readonly maxConcurrency: number,
    /** `admission.max_queued`: how many more may wait for a slot or for their body. */
    readonly maxQueued: number,
    /** Calls in flight on the Governor's "gateway" group, for the refusal's numbers. */
    readonly inflight: () => number,
  ) {}

  /** Requests holding the bound now. */
  get admitted(): number {
    return this.#admitted;
  }

  /** The refusal an arrival gets now, or undefined when it fits. Counts nothing. */
  refusal(): QueueFullError | undefined {
    if (this.#admitted < this.maxConcurrency + this.maxQueued) return undefined;
    const inflight = this.inflight();
    // Retry-After is the floor for now: the bound knows its count, not its drain rate.
    return new QueueFullError(
      "gateway",
      inflight,
      this.#admitted - inflight,
      this.maxQueued,
      this.maxConcurrency,
      MIN_RETRY_AFTER_MS,
    );
  }

  /** One more request admitted (after {@link refusal} said it fits, or in shadow mode). */
  take(): void {
    this.#admitted++;
  }

  /** One admitted request ended; wakes {@link whenIdle} at zero. */
  give(): void {
    if (--this.#admitted === 0 && this.#idle !== null) {
      const { resolve } = this.#idle;
      this.#idle = null;
      resolve();
    }
  }

  /** Resolves once nothing holds the bound (at once when nothing does). */
  whenIdle(): Promise<void> {
    if (this.#admitted === 0) return Promise.resolve();
    if (this.#idle === null) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.#idle = { promise, resolve };
    }
    return this.#idle.promise;
  }
}

/** The gateway-wide count of buffered request body bytes (`admission.max_buffered_bytes`). */
export class BufferBudget {
  used = 0;

  constructor(readonly limit: number) {}
}
