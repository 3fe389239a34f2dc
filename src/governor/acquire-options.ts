/** The options of `Governor.acquire` and the payload of `onBreakerChange`. */
import type { BreakerTransition } from "../core/breaker.js";
import type { Priority } from "../core/priority.js";

/** Options of one `acquire`. */
export interface AcquireOptions {
  /** Class of this call. **Default:** the surrounding `withPriority`, else `"default"`. */
  priority?: Priority;
  /** Key (tenant) the call counts against; its `maxPriority` caps `priority`. */
  key?: string;
  /** Estimated tokens. Accepted for the token budgets (`tpm`) of a later release; not used yet. */
  tokens?: number;
  /** Abort while waiting removes the waiter and rejects with `signal.reason`. */
  signal?: AbortSignal;
  /** Original arrival time (clock ms), kept across reconnects so aging continues. */
  arrivedAt?: number;
  /** When every pod of the lane is tripped, reject with `BreakerOpenError` instead of waiting. */
  failFast?: boolean;
  /** `false`: take a slot only if one is free now, else reject with `QueueFullError` (reason `no_wait`). **Default:** true. */
  wait?: boolean;
}

/** Payload of `onBreakerChange`. */
export interface BreakerEvent {
  lane: string;
  pod: string;
  from: BreakerTransition["from"];
  to: BreakerTransition["to"];
}
