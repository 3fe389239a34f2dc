/**
 * The Governor's helpers that hold a slot around a caller's work. `gov.run()`: one call, its
 * outcome fed to the pod. `gov.stream()`: a slot held for a whole stream (DESIGN §1.2, seed 002
 * D3–D5). The slot is
 * taken before the stream opens and given back when it is exhausted, throws, or the consumer
 * stops (`return()` on the iterator, `break` in `for await`, or an abort). A failure before
 * any item releases first, backs off, and re-acquires with the original arrival time; a queue
 * timeout is the caller's answer and is never retried.
 */
import type { Clock } from "../core/clock.js";
import { isSluiceError } from "../core/errors.js";
import type { Lease } from "../core/lease.js";
import { classifyOutcome } from "../core/outcome.js";
import type { AcquireOptions } from "./acquire-options.js";

/** What `run`/`stream` hand the call. */
export interface CallContext {
  lease: Lease;
  /** The pod to call, for lanes served by pods. */
  pod: string | undefined;
  signal: AbortSignal | undefined;
}

/** `gov.run()`: runs `fn` holding a slot; success or failure feeds the pod, and the slot is always released. */
export async function runWithLease<R>(
  gov: Acquirer,
  lane: string,
  fn: (ctx: CallContext) => Promise<R>,
  options: AcquireOptions,
): Promise<R> {
  const lease = await gov.acquire(lane, options);
  try {
    const result = await fn({ lease, pod: lease.pod, signal: options.signal });
    lease.succeeded();
    return result;
  } catch (error) {
    lease.failed(error);
    throw error;
  }
}

/** Options of `gov.stream()`. */
export interface StreamOptions extends AcquireOptions {
  /** Reconnects allowed when the stream fails before its first item. **Default:** 2. */
  reconnects?: number;
  /** First reconnect backoff, doubled each time with full jitter. **Default:** 250 ms. */
  backoffMs?: number;
}

interface Acquirer {
  acquire(lane: string, options: AcquireOptions): Promise<Lease>;
}

export async function* streamWithLease<T>(
  gov: Acquirer,
  clock: Clock,
  random: () => number,
  lane: string,
  factory: (ctx: CallContext) => AsyncIterable<T> | Promise<AsyncIterable<T>>,
  options: StreamOptions,
): AsyncGenerator<T, void, undefined> {
  const arrivedAt = options.arrivedAt ?? clock.now();
  const reconnects = options.reconnects ?? 2;
  const backoffMs = options.backoffMs ?? 250;
  for (let attempt = 0; ; attempt++) {
    // Acquisition sits outside the try: a queue timeout or refusal propagates, never retried.
    const lease = await gov.acquire(lane, { ...options, arrivedAt });
    let started = false;
    let ended = false;
    try {
      const iterable = await factory({ lease, pod: lease.pod, signal: options.signal });
      for await (const item of iterable) {
        started = true;
        yield item;
      }
      lease.succeeded();
      ended = true;
      return;
    } catch (error) {
      ended = true;
      lease.failed(error);
      const retryable =
        !started &&
        attempt < reconnects &&
        !isSluiceError(error) &&
        !options.signal?.aborted &&
        classifyOutcome(error).kind !== "ignore";
      if (!retryable) throw error;
    } finally {
      // The consumer stopped early (return()/break): give the slot back, no verdict.
      if (!ended) lease.release();
    }
    // Released before the backoff, so the wait holds no slot (seed 002 D5).
    await sleep(clock, random() * backoffMs * 2 ** attempt, options.signal); // full jitter
  }
}

function sleep(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      cancel();
      reject(signal!.reason);
    };
    const cancel = clock.setTimer(clock.now() + ms, () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
