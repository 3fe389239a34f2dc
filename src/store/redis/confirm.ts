/**
 * A grant's second step (`RedisStore.confirm`): the scheduler's pass took the path from this
 * replica's mirror of the fleet; this asks Redis to take it for the fleet — one script over every
 * fleet budget of the path (`grant.ts`: batched with the turn's other grants), Redis time, all or
 * nothing — and follows the answer: the mirror's counts of the other replicas, the buckets' and
 * pauses' levels, the room left for better waiters elsewhere. While Redis is away the outage
 * policy decides (`outage.ts`): held locally under `local` and `open`, refused under `closed`.
 */

import { StoreUnavailableError } from "../../core/errors.js";
import type { Path } from "../../core/path.js";
import type { Rank } from "../../core/priority.js";
import { type FleetGrants, type GrantAnswer, grantRequest } from "./grant.js";
import type { FleetMirror } from "./mirror.js";
import type { FleetOutage } from "./outage.js";
import type { FleetRates, MeteredPart } from "./rates.js";
import type { FleetReleases } from "./releases.js";
import type { FleetResync } from "./resync.js";

/** The parts of the store a confirm reads and updates. */
export interface ConfirmParts {
  readonly grants: FleetGrants;
  readonly mirror: FleetMirror;
  readonly rates: FleetRates;
  readonly releases: FleetReleases;
  readonly resync: FleetResync;
  readonly outage: FleetOutage;
  /** The replicas set and this replica's id in it, as every grant names them. */
  readonly lease: { readonly replicasKey: string; readonly replica: string };
  /** The store as an error names it (its URL without the password). */
  readonly description: string;
  /** The scheduler's clock (`useClock`). */
  now(): number;
}

export class FleetConfirm {
  constructor(readonly parts: ConfirmParts) {}

  /**
   * Confirms with the fleet what `take` took locally from `path` (from `from` on), for a call of
   * estimate `cost` and effective class `effective`. Resolves false when another replica holds the
   * room (the caller rolls back); rejects with `StoreUnavailableError` while Redis is down and the
   * policy is `closed`.
   */
  async confirm(path: Path, rank: Rank, from: number, cost: number, effective: number): Promise<boolean> {
    while (this.parts.resync.due) await this.parts.resync.wait(); // after an outage: this replica's counts first
    const fleet = this.parts.mirror.fleetPart(path, rank, from);
    const metered = this.parts.rates.part(path, cost, from, rank);
    if (fleet.keys.length === 0 && metered === null) return true;
    if (this.parts.outage.grantsLocally) return this.#heldLocally(fleet.keys, metered);
    // Settling after an outage or a flush: not past this replica's share until the others' calls are counted.
    if (this.parts.outage.holdsBack(fleet.keys, fleet.limits, metered)) return false;
    const heard = this.parts.mirror.heard(fleet.keys);
    this.parts.releases.flushFor(fleet.keys, fleet.spare);
    // A release still unsent, or given while the grant is asked, reaches Redis after it: if that
    // refuses, look again (nothing else would: the slot was freed here already).
    const unsent = this.parts.releases.holds(fleet.keys);
    const given = this.parts.releases.given;
    let reply: GrantAnswer;
    this.parts.resync.sent();
    try {
      reply = await this.parts.grants.askKnown(grantRequest(fleet, this.parts.lease, metered, effective));
    } catch (error) {
      this.parts.outage.failed();
      this.parts.resync.answered();
      if (this.parts.outage.mode !== "closed") return this.#heldLocally(fleet.keys, metered);
      this.parts.rates.unreached(metered, this.parts.now());
      throw new StoreUnavailableError(
        `fleet store ${this.parts.description} unreachable: ${(error as Error).message}`,
      );
    }
    this.parts.outage.ok();
    const granted = reply.granted;
    this.parts.rates.confirmed(metered, reply, this.parts.now());
    this.parts.mirror.setOthers(fleet.budgets, reply.others, fleet.keys, heard); // room grew: it looks again
    // Better waiters elsewhere, this replica's fair share (asked with the lane's waiters): leave their room.
    if (reply.lane !== null) this.parts.mirror.laneAnswer(fleet.keys[0]!, reply.lane, granted);
    if (!granted) {
      const gave = unsent || this.parts.releases.given !== given;
      // A release heard while it was asked ran its pass while this call held its local take: look again.
      const missed = this.parts.mirror.heardSince(fleet.keys, heard);
      if (gave || missed) this.parts.mirror.lookAgainSoon(); // after the requeue
      this.parts.resync.answered();
      return false;
    }
    this.parts.mirror.confirmed(fleet.keys, +1);
    this.parts.resync.answered();
    return !this.parts.outage.overShare(fleet.keys, fleet.limits, metered); // given back if it is
  }

  /** A grant Redis did not see (`local`, `open`): held all the same, so in the counts the rewrite writes. */
  #heldLocally(keys: readonly string[], metered: MeteredPart | null): true {
    this.parts.mirror.confirmed(keys, +1);
    return this.parts.rates.unconfirmed(metered);
  }
}
