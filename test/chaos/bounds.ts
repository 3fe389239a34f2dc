/**
 * What docs/fleet.md promises for each fault, as numbers the verdict can hold the pods to:
 * how far above a budget's limit the pods may be while the fault is in force, for how long after
 * it is lifted that allowance lasts, and how long waiters may wait meanwhile although the pods
 * have room. Each entry quotes where the promise is written; an entry with `documented: false`
 * has no written bound yet, so the harness holds it to none (zero overshoot) and says so.
 */
import type { FaultKind } from "./faults.js";
import { type FleetShape, heartbeatMs } from "./shape.js";

export interface FaultBound {
  /** Calls above a budget's limit the pods may see while the fault is in force. */
  during(limit: number): number;
  /** … and in the `afterMs` after it is lifted. */
  after(limit: number): number;
  /** How long after the fault is lifted `after` (and the waiters' exemption) lasts. */
  afterMs: number;
  /** Whether waiters may wait with room at the pods while it is in force (the fleet cannot see the room). */
  waitersExempt: boolean;
  /** Where docs/fleet.md says so (or that it does not). */
  source: string;
  documented: boolean;
}

/**
 * ioredis reconnects with a backoff after Redis or the connection comes back; the promises count
 * from "Redis answers again", which is up to this much after the harness lifted the fault.
 */
export const RECONNECT_SLACK_MS = 1000;

/** The bound of each fault kind for a fleet of this shape. */
export function faultBounds(shape: FleetShape): Record<FaultKind, FaultBound> {
  const hb = heartbeatMs(shape);
  const lease = shape.leaseTtlMs;
  const none = () => 0;
  // "With N live replicas the fleet holds at most N × ⌊limit ÷ expected_replicas⌋": above the
  // limit only where that product is.
  const localShare = (limit: number) =>
    Math.max(0, shape.replicas * Math.floor(limit / shape.expectedReplicas) - limit);
  // "Worst-case overshoot … bounded by what the replicas granted locally during the gap — at
  // most N × ⌊limit ÷ expected_replicas⌋ — and lasts at most one heartbeat after Redis answers".
  const grantedInGap = (_limit: number) => shape.replicas * Math.floor(_limit / shape.expectedReplicas);
  const outage = (how: string): FaultBound => ({
    during: localShare,
    after: grantedInGap,
    afterMs: hb + RECONNECT_SLACK_MS,
    waitersExempt: true,
    source: `When Redis goes away (${how}): local policy while away, Worst-case overshoot for a heartbeat after`,
    documented: true,
  });
  return {
    "replica-kill": {
      during: none,
      after: none,
      // From the SIGKILL: its last heartbeat was before it, so its lease ends within lease_ttl_s.
      afterMs: lease,
      waitersExempt: true,
      source: "Crash safety: a killed replica's calls stop counting within lease_ttl_s of its last heartbeat",
      documented: true,
    },
    "pause-short": {
      during: none,
      after: none,
      afterMs: hb,
      waitersExempt: true,
      source: "a pause shorter than the lease keeps the lease: nothing is reclaimed, nothing above the limit",
      documented: true,
    },
    "pause-long": {
      during: none,
      after: none,
      afterMs: lease + hb,
      waitersExempt: true,
      source: "not written yet (issue 22 defect 4: a replica paused past its lease)",
      documented: false,
    },
    "redis-restart": outage("killed, started empty"),
    "redis-stop": outage("down for seconds, back empty"),
    "redis-flushall": {
      during: none,
      after: none,
      afterMs: hb + RECONNECT_SLACK_MS,
      waitersExempt: true,
      source: "not written yet (issue 22: 'after a FLUSHALL'; re-initialised by the next heartbeat)",
      documented: false,
    },
    "redis-sleep": outage("a script unanswered for a heartbeat, at least 5 s, starts the policy"),
    "redis-maxmemory": outage("a failed round trip"),
    "proxy-drop": outage("a dropped connection, then the rewrite"),
    "proxy-blackhole": outage("a partition that drops packets"),
    sighup: {
      during: none,
      after: none,
      afterMs: hb,
      waitersExempt: false,
      source: "a reload applies to the live lanes without dropping a call: nothing above the limit",
      documented: true,
    },
  };
}
