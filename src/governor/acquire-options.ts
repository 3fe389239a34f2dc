/** The options of `Governor.acquire` (and the check of its `tokens`) and the payload of `onBreakerChange`. */
import type { BreakerTransition } from "../core/breaker.js";
import type { ArrivalBudget } from "../core/budget.js";
import type { Priority, Rank } from "../core/priority.js";

/** Options of one `acquire`. */
export interface AcquireOptions {
  /** Class of this call. **Default:** the surrounding `withPriority`, else `"default"`. */
  priority?: Priority;
  /** Key (tenant) the call counts against; its `maxPriority` caps `priority`. */
  key?: string;
  /**
   * The call's token estimate (prompt + the most it may generate): reserved at the grant on the
   * token budgets (`tpm`) of its lane and account, and reconciled with `lease.succeeded({ tokens })`.
   * A request budget (`rpm`) counts one per call whatever this says. **Default:** 0.
   */
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

/** `acquire`'s `tokens`: a number ≥ 0 (0 when absent), or the error for anything else. */
export function tokenEstimate(tokens: unknown): number | TypeError {
  if (tokens === undefined) return 0;
  if (typeof tokens === "number" && Number.isFinite(tokens) && tokens >= 0) return tokens;
  return new TypeError(
    `tokens must be a number ≥ 0 (the call's token estimate); got ${JSON.stringify(tokens)}`,
  );
}

/** A class's rank, lowered to the highest class the key may claim. */
export function capped(rank: Rank, key: ArrivalBudget | null): Rank {
  return key === null ? rank : key.cap(rank);
}
