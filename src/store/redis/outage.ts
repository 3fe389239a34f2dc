/**
 * Which mode the fleet store is in — `connected`, or the outage policy (`on_store_error`) since a
 * round trip failed — and what changes as it enters and leaves one: under `local` every budget's
 * room check keeps this replica to its share (`redis/shares.ts`: counting what the others held
 * when last heard) and the buckets are divided; on the way back the buckets are charged what was
 * taken meanwhile, learned pauses are shared, this replica's fields are rewritten
 * (`redis/resync.ts`) and the shares hold until the others' calls are counted again (settling).
 */
import type { FleetAccounts } from "./accounts.js";
import type { FleetMirror } from "./mirror.js";
import type { FleetStatus, OnStoreError } from "./options.js";
import type { FleetLink, FleetRates, MeteredPart } from "./rates.js";
import type { FleetReleases } from "./releases.js";
import type { FleetResync } from "./resync.js";
import type { HeartbeatAnswer } from "./script-calls.js";
import { FleetShares } from "./shares.js";

/** What entering and leaving an outage touches. */
export interface OutageParts {
  readonly policy: OnStoreError;
  /** `expected_replicas`. */
  readonly replicas: number;
  readonly leaseTtlMs: number;
  readonly mirror: FleetMirror;
  readonly rates: FleetRates;
  readonly accounts: FleetAccounts;
  readonly resync: FleetResync;
  readonly releases: FleetReleases;
  readonly link: FleetLink;
  /** A round trip failed (`onError`, `sluice_store_errors_total`). */
  readonly errored: () => void;
  /** Re-reads the fleet (a counts-only heartbeat), while settling. */
  readonly beat: () => void;
  /** Asks every other replica to heartbeat now, while settling. */
  readonly rollCall: () => void;
}

export class FleetOutage {
  #mode: FleetStatus["mode"] = "connected";
  #errors = 0;
  readonly shares: FleetShares;

  constructor(readonly parts: OutageParts) {
    this.shares = new FleetShares(parts.replicas, parts.leaseTtlMs, parts.beat, parts.rollCall);
  }

  get mode(): FleetStatus["mode"] {
    return this.#mode;
  }

  /** Whether grants are decided here without Redis (`local`, `open` in force). */
  get grantsLocally(): boolean {
    return this.#mode === "local" || this.#mode === "open";
  }

  /** Consecutive failed round trips. */
  get errors(): number {
    return this.#errors;
  }

  /**
   * While settling (`redis/shares.ts`): whether a grant on `keys` (this call's `limits`) must wait,
   * this replica holding its share on one of them already; its metered part is then given back
   * as if Redis had not been reached. It is looked at again when settling ends (`heard`).
   */
  holdsBack(keys: readonly string[], limits: readonly number[], metered: MeteredPart | null): boolean {
    if (!this.shares.settling) return false; // every grant asks: no closure made when not settling
    const { mirror, rates, link } = this.parts;
    if (!this.shares.holdsBack(keys, limits, (key) => mirror.mine(key))) return false;
    rates.unreached(metered, link.now());
    return true;
  }

  /**
   * A grant Redis just granted (and `mine` counts) while settling began under it: the grant asked
   * again right after this replica re-registered (`FleetGrants.askKnown`) was sent before any
   * share was in force. Past the share, it is given back at once (a release) and true is returned
   * — the caller takes it back locally and the waiter stays in line. A metered grant keeps its
   * slot: its tokens were taken in Redis, and a release would not give them back.
   */
  overShare(keys: readonly string[], limits: readonly number[], metered: MeteredPart | null): boolean {
    if (!this.shares.settling || metered !== null) return false;
    const { mirror, releases } = this.parts;
    if (!this.shares.holdsBack(keys, limits, (key) => mirror.mine(key) - 1)) return false;
    mirror.confirmed(keys, -1);
    releases.add(keys);
    return true;
  }

  /** For the per-key arrivals (`FleetKeys`): whether `n` more on `key` pass the share while settling. */
  readonly keySettling = {
    holds: (key: string, limit: number, n: number): boolean =>
      this.shares.holdsBack([key], [limit], (k) => this.parts.mirror.mine(k) + n - 1),
    settled: (): Promise<void> => this.shares.settled(),
  };

  /**
   * A heartbeat's answer (`heartbeat.lua`) for `keys`. `reRegistered`: Redis had forgotten this
   * replica since it last heard (a flush, a lease that expired while the process was paused), so
   * the others' calls are not all counted again yet either: the shares hold until they are.
   * Returns true when settling ended (a pass must run).
   */
  heard(keys: readonly string[], reply: HeartbeatAnswer, reRegistered: boolean): boolean {
    if (reRegistered && this.parts.policy !== "open") this.shares.settle();
    return this.shares.heard(keys, reply.each, reply.live, reply.redisNowMs);
  }

  /** A round trip got through: leaves the outage, if in one. */
  ok(): void {
    this.#errors = 0;
    if (this.#mode === "connected") return;
    const { mirror, rates, accounts, resync, link, policy } = this.parts;
    this.#mode = "connected";
    mirror.leaveOutage();
    // What was reserved and settled meanwhile is charged to the fleet's buckets now.
    for (const owed of rates.leaveOutage(link.now())) rates.send(owed, link);
    accounts.shareLearnedInOutage(); // caps cut and pauses learned meanwhile
    resync.kick(); // what was granted and released meanwhile
    // The others' calls are not all in Redis yet (one still in its outage, one Redis forgot):
    // the shares hold until they are, except under `open`, which never bounds the fleet.
    if (policy === "open") this.shares.stop();
    else this.shares.settle();
  }

  /** A round trip failed: enters the outage policy (left again by the next good round trip). */
  failed(): void {
    const { mirror, rates, resync, link, policy, replicas, errored } = this.parts;
    this.#errors++;
    errored();
    resync.stale(); // a release or grant may be lost, or run unanswered
    resync.wake(); // grants waiting for a rewrite go the outage's way
    if (this.#mode !== "connected") return;
    this.#mode = policy;
    this.shares.freeze(); // what each replica held when last heard
    if (policy === "local") {
      mirror.enterOutage((key, limit, heard) => this.shares.othersFor(key, limit, heard));
      rates.enterOutage(replicas, link.now());
    }
    link.changed();
  }
}
