/** What a sim counted (`sim.stats()`), in its own module so its readers need not import the server. */

/** Counters for tests, as plain data. */
export interface SimStats {
  /** Work requests holding a slot now. */
  running: number;
  /** Work requests waiting for a slot now. */
  waiting: number;
  /** Highest `running` since start or `resetStats()`; exact (updated at every grant). */
  maxRunningSeen: number;
  /** Highest `waiting` since start or `resetStats()`. */
  maxWaitingSeen: number;
  /** Work requests (completions, embeddings, echo) whose headers arrived, refused ones included. */
  received: number;
  /** Work requests answered 200 in full. */
  completed: number;
  /** Highest `running + waiting`: what clients had in flight here at once. */
  maxInflightSeen: number;
  /** Overflows: answered 503/429 or refused by destroying the socket (the sum of the next three). */
  refused: number;
  /** Overflows refused at the connection: the socket destroyed before any response byte, body unread. */
  refusedConnections: number;
  /** Overflows answered 429 (a provider's throttle). */
  throttled: number;
  /** Overflows answered 503. */
  overloaded: number;
  /** OOMs of this sim's machine since it started (shared sims report the same machine's count). */
  oomEvents: number;
  /** Work requests cut because the host went down under them (an OOM). */
  cutByOom: number;
  /** True while the host is down after an OOM (connections refused). */
  down: boolean;
  /** ∫ running dt in slot-milliseconds since start or `resetStats()`: utilization = Δ ÷ (maxNumSeqs × Δt). */
  busySlotMs: number;
  /** Work requests whose client went away (or that `close()` cut) before their answer ended. */
  aborted: number;
  /** Work requests answered 400. */
  badRequests: number;
  /** Body bytes read from work requests (a refused or overflowed body is never read). */
  bodyBytesReceived: number;
  /** The last `AUTH_HISTORY` Authorization header values received on work routes, oldest first. */
  authHeadersSeen: string[];
  /**
   * Work requests that carried an `x-sim-tenant` header, by its value (a load profile's tenants:
   * what this pod did for each, counted here rather than by whoever sent them). Empty without.
   */
  tenants: Record<string, TenantStats>;
}

/** What a pod did for one `x-sim-tenant`. */
export interface TenantStats {
  /** Answered 200 in full. */
  completed: number;
  /** Left before their answer ended (the client gave up, or `close()`). */
  aborted: number;
  /** Prompt and completion tokens of the completed ones, as their `usage` says. */
  promptTokens: number;
  completionTokens: number;
  /** Slot-ms they held, from the grant to the end (aborted ones included): their part of `busySlotMs`. */
  slotMs: number;
}
