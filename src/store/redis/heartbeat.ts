/**
 * A replica's heartbeat (`heartbeat.lua`): it renews the replica's lease every third of the lease
 * TTL (`heartbeatMs`, core/fleet-options.ts), so the fleet counts its calls while it lives and
 * forgets them within the TTL once it dies. Each beat is also the polling fallback: it re-reads
 * what the other replicas hold on every budget (room freed by a lost release message or an
 * expired lease is seen here at the latest), and when Redis has forgotten this replica (a flush,
 * a lease that expired while the process was paused) it writes back every count it holds.
 *
 * A full beat (the timer's) also re-reads the buckets and pauses, re-writes the waiters'
 * advertisement and reads the kept state of pods met since; a counts-only beat is what a replica
 * that starts waiting, or settles after an outage, asks for.
 */
import type { FleetMirror } from "./mirror.js";
import type { FleetOutage } from "./outage.js";
import type { FleetPods } from "./pods.js";
import type { FleetLink, FleetRates } from "./rates.js";
import type { FleetReleases } from "./releases.js";
import type { FleetResync } from "./resync.js";
import * as script from "./script-calls.js";
import type { ScriptClient } from "./scripts.js";
import type { FleetWaiters } from "./waiters.js";

/** The parts of the store a heartbeat reads and updates. */
export interface HeartbeatParts {
  /** The store's scripts of one turn (`turnPipelined`). */
  readonly client: ScriptClient;
  /** The replicas set and this replica's id in it. */
  readonly lease: { readonly replicasKey: string; readonly replica: string };
  readonly leaseTtlMs: number;
  /** How often the timer beats (a third of the lease). */
  readonly heartbeatMs: number;
  readonly link: FleetLink;
  readonly mirror: FleetMirror;
  readonly rates: FleetRates;
  readonly releases: FleetReleases;
  readonly resync: FleetResync;
  readonly outage: FleetOutage;
  readonly waiters: FleetWaiters;
  readonly pods: FleetPods;
  /** Other replicas may have freed room: the store's waiters look again. */
  readonly changed: () => void;
}

export class FleetHeartbeat {
  #registered = false; // a heartbeat was answered: a re-registration now means Redis forgot us
  #timer: NodeJS.Timeout | undefined;

  constructor(readonly parts: HeartbeatParts) {}

  /** Whether the timer runs (the store has started). */
  get started(): boolean {
    return this.#timer !== undefined;
  }

  /** Beats every `heartbeatMs` from now on (full beats); the timer keeps no process alive. */
  start(): void {
    this.#timer = setInterval(() => void this.beat(true), this.parts.heartbeatMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /**
   * Renews the lease and re-reads the fleet; writes back what this replica holds when Redis forgot
   * it. `full` false: the counts only, re-read as this replica starts waiting (sent synchronously).
   * A failed round trip enters the outage policy; it never rejects.
   */
  async beat(full: boolean): Promise<void> {
    const { mirror, resync, outage, lease } = this.parts;
    void this.parts.releases.flush(); // before the counts below: a re-registration writes them after the release
    const rewrite = resync.begin(); // after an outage: every field of this replica, known or not
    const { keys, counts, budgets } = mirror.all();
    const heard = mirror.heard(keys);
    // This replica's fields are exact after the script: written back now, or nothing failed since.
    const exact = rewrite !== undefined || resync.exact; // `{P}:synced`
    try {
      const reply = await script.heartbeat(this.parts.client, {
        ...{ replicasKey: lease.replicasKey, replica: lease.replica, ttlMs: this.parts.leaseTtlMs },
        ...{ keys, counts, rewrite: rewrite !== undefined, exact },
      });
      const wasDown = outage.mode !== "connected";
      outage.ok();
      if (rewrite !== undefined) resync.done(rewrite, true);
      // The polling fallback: room freed by a lost release message or an expired lease is seen
      // here at the latest, and every full heartbeat looks at the waiters (no waiter outwaits one).
      mirror.setOthers(budgets, reply.others, keys, heard); // room grew: it looks again
      const settled = outage.heard(keys, reply, reply.reRegistered && this.#registered);
      this.#registered = true;
      if (full) {
        const { rates, link, waiters, pods } = this.parts;
        await Promise.all([rates.refresh(link), waiters.write(true), pods.load()]);
      }
      if (wasDown || reply.reRegistered || full || settled) this.parts.changed();
    } catch {
      outage.failed();
      if (rewrite !== undefined) resync.done(rewrite, false);
    }
  }
}
