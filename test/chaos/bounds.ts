/**
 * What docs/fleet.md promises for each fault ("The promises per fault, as invariants", under
 * "When Redis goes away"), as numbers the verdict can hold the pods to. The promises bound
 * *grants* ("a call already running is never cut"), so the verdict checks every start at a pod:
 * a call may start above a budget's limit only by the allowance of a fault whose window is open
 * then — from the fault's start to `afterMs` after it is lifted (its settling) — and calls started
 * within it may run on past the window. Each entry quotes the row it comes from; an entry with
 * `documented: false` has no written bound, so the harness holds it to none and says so.
 */
import type { FaultKind } from "./faults.js";
import { type FleetShape, heartbeatMs } from "./shape.js";

/** A budget counted at the pods: "lane", "pod:p0", "key:k-bound". */
export interface Budget {
  readonly name: string;
  readonly limit: number;
}

/** What the ledger says about the moment a fault began, per budget (by name). */
export interface AtFault {
  /** What the replica it hit had running at the pods. */
  readonly held: Readonly<Record<string, number>>;
  /** Calls started at the pods in the heartbeat before it (and 100 ms after: grants on their way). */
  readonly recent: Readonly<Record<string, number>>;
}

export interface FaultBound {
  /** The most calls above `budget`'s limit a start at the pods may leave while the window is open. */
  over(budget: Budget, at: AtFault): number;
  /** How long the window stays open after the fault is lifted (settling, and the waiters' excuse). */
  afterMs: number;
  /** Whether waiters may wait with room at the pods in the window (the fleet cannot see that room). */
  waitersExempt: boolean;
  /** The row of docs/fleet.md it comes from. */
  source: string;
  documented: boolean;
}

/**
 * "A replica notices Redis is back as soon as its connection is ready again (ioredis reconnects
 * with a backoff of at most 2 s)": the windows of faults that cut Redis off count from then.
 */
export const RECONNECT_MS = 2000;

/** The bound of each fault kind for a fleet of this shape. */
export function faultBounds(shape: FleetShape): Record<FaultKind, FaultBound> {
  const hb = heartbeatMs(shape);
  const lease = shape.leaseTtlMs;
  const R = shape.replicas;
  const N = shape.expectedReplicas;
  const f = (limit: number) => Math.floor(limit / N);
  // "Redis away, local: … the calls the other replicas were granted within the last heartbeat
  // before Redis went away (at most (R − 1) × max(1, f)), plus (R − N) × max(1, f) when more
  // replicas run than expected_replicas, plus N − L when L < N."
  // The calls granted in the last heartbeat are what the shares could not see (counted at the
  // pods); the cap is the worst case the row states.
  const away = (b: Budget, at: AtFault) =>
    Math.min(at.recent[b.name] ?? 0, (R - 1) * Math.max(1, f(b.limit))) +
    Math.max(0, R - N) * Math.max(1, f(b.limit)) +
    Math.max(0, N - b.limit);
  const redisAway = (how: string): FaultBound => ({
    over: away,
    // "Redis back: … the shares hold until every replica is counted again … at most lease_ttl_s"
    // after the last replica reconnects.
    afterMs: RECONNECT_MS + lease,
    waitersExempt: true,
    source: `Redis away, local (${how}), then Redis back: settled within lease_ttl_s of reconnecting`,
    documented: true,
  });
  // "One replica cut off from Redis: at most max(1, f); once its lease has expired … at most
  // max(its calls at the cut, max(1, f)) in all; until it reaches Redis again (then it settles)."
  const partition = (how: string): FaultBound => ({
    over: (b, at) => Math.max(at.held[b.name] ?? 0, Math.max(1, f(b.limit))),
    afterMs: RECONNECT_MS + lease,
    waitersExempt: true,
    source: `One replica cut off from Redis (${how})`,
    documented: true,
  });
  const none = () => 0;
  return {
    "replica-kill": {
      over: none,
      // "its slots come back lease_ttl_s after its last heartbeat" — before the kill.
      afterMs: lease,
      waitersExempt: true,
      source: "A replica killed (SIGKILL): 0 over; its slots come back lease_ttl_s after its last heartbeat",
      documented: true,
    },
    "pause-short": {
      over: none,
      afterMs: hb,
      waitersExempt: true,
      source: "A replica paused shorter than lease_ttl_s: 0, its lease and its counts live on",
      documented: true,
    },
    "pause-long": {
      // "what it held when paused … until the calls it held end"; on resuming it settles like
      // after a flush (a heartbeat to re-register, then at most lease_ttl_s).
      over: (b, at) => at.held[b.name] ?? 0,
      afterMs: hb + lease,
      waitersExempt: true,
      source: "A replica paused longer than lease_ttl_s: what it held when paused, until those calls end",
      documented: true,
    },
    "redis-restart": redisAway("killed, started again at once, empty"),
    "redis-stop": redisAway("down for seconds, back empty"),
    "redis-flushall": {
      // "as for Redis back: 0 with exact heard counts. Per-key bounds too" — the shares hold while
      // it settles, "usually one round trip after the first replica re-registers" (a heartbeat).
      over: away,
      afterMs: hb + lease,
      waitersExempt: true,
      source: "FLUSHALL: as for Redis back, per-key bounds too; settled within lease_ttl_s of re-registering",
      documented: true,
    },
    "redis-sleep": redisAway("DEBUG SLEEP: past the 5 s script timeout the policy starts"),
    "redis-maxmemory": redisAway("maxmemory: every write refused"),
    "proxy-drop": partition("its connections reset"),
    "proxy-blackhole": partition("its traffic lost, then reset"),
    sighup: {
      over: none,
      afterMs: hb,
      waitersExempt: false,
      source: "a reload applies to the live lanes without dropping a call: nothing above a limit",
      documented: true,
    },
  };
}
