/**
 * `on_store_error: local`'s shares, worked out from what each replica last heard, and the settling
 * after Redis answers again (issue 22 defect 3). The policy's modes are `redis/outage.ts`'s.
 *
 * While Redis is away, each replica holds at most its **allowance** on a budget of limit L, with
 * N = `expected_replicas`, f = ⌊L ÷ N⌋ and h_j what replica j held when this one last heard:
 *
 *     allowance = max(0, min(max(1, f), L − Σ_j max(h_j, f) − f × (N − 1 − k)))
 *
 * (the sum over the k other replicas heard holding calls; those not heard, up to N − 1 of them,
 * count f each). Every other replica is taken to keep what it held, or to grow to its own share:
 * what it may hold while no one can tell it otherwise. The replica that held everything keeps
 * its calls and takes no more until it is down to f; the others leave its calls their room.
 * Why the pod never sees more than L (when every replica heard the others' counts as they were):
 * a replica grows past what it held only up to its allowance, and for any replica i that grows,
 * the pod holds at most allowance_i + Σ_{j≠i} max(h_j, allowance_j) ≤ allowance_i + Σ_{j≠i}
 * max(h_j, f) ≤ L. (With f = 0, L < N, each replica may still take 1: up to N.) The counts come
 * from the last heartbeat (`heartbeat.lua` answers each other replica's count); what the others
 * gained since, seen in fresher grant answers, counts on top (`drift`), so a heartbeat-old picture
 * errs towards holding back. What they gained since this replica last heard at all is the bound's
 * one overshoot: at most (N − 1) × max(1, f), only when the others' counts rose within the last
 * heartbeat before Redis went away, for as long as those calls run.
 *
 * **Settling.** When Redis answers again (or this replica finds it was forgotten: a flush, a lease
 * that expired while the process was paused), the other replicas' calls are not all in Redis yet:
 * one still in its outage grants locally until its next round trip, one Redis forgot re-registers
 * at its next heartbeat. So the allowance stays in force — grants are asked of Redis, and also
 * refused here past the allowance — until every live replica, and every replica heard before, has
 * marked its counts exact in Redis since this replica came back (`{P}:synced`, written by each
 * heartbeat whose fields are exact), or one `lease_ttl_s` has passed (a replica that has not come
 * back by then has lost its lease: its calls no longer count anywhere). Meanwhile the store
 * re-reads the fleet every `SETTLE_POLL_MS`, and once it knows since when it settles it calls the
 * roll (`{P}:settle`): every replica that hears it heartbeats at once, so a replica that never
 * lost Redis marks its counts within a round trip instead of at its next heartbeat.
 */

import { heartbeatMs } from "../../core/fleet-options.js";

/** How often a settling replica re-reads the fleet (and the others' marks), at most. */
export const SETTLE_POLL_MS = 250;

/** A frozen picture of the fleet: each budget's other replicas' counts, and who was live. */
interface Heard {
  readonly counts: ReadonlyMap<string, readonly number[]>;
  readonly replicas: ReadonlySet<string>;
}

export class FleetShares {
  /** Each budget's other replicas' counts, one by one, as the last heartbeat answered them. */
  #counts = new Map<string, readonly number[]>();
  /** The other live replicas at the last heartbeat, with when each last marked its counts exact. */
  #live = new Map<string, number>();
  /** The picture the allowance is worked out from: frozen as the outage (or a re-registration) began. */
  #frozen: Heard | undefined;
  /** Settling: since when (Redis ms of the first heartbeat answered after it began), and its poll. */
  #settling: { since: number | undefined; poll: NodeJS.Timeout } | undefined;
  /** What waits for settling to end (`settled`). */
  readonly #waiting: Array<() => void> = [];

  constructor(
    /** `expected_replicas`: N. */
    readonly replicas: number,
    readonly leaseTtlMs: number,
    /** Re-reads the fleet (a counts-only heartbeat) while settling. */
    readonly beat: () => void,
    /** Asks every other replica to heartbeat now (publishes on `{P}:settle`). */
    readonly rollCall: () => void,
  ) {}

  /** Whether the allowance still holds after Redis answered again. */
  get settling(): boolean {
    return this.#settling !== undefined;
  }

  /**
   * A heartbeat's answer: each budget of `keys` with the other replicas' counts (`each`), and the
   * other live replicas with their exact-marks (`live`: id and ms), at Redis time `now`.
   * Returns true when settling ended with it (the waiters held back may go now).
   */
  heard(
    keys: readonly string[],
    each: readonly number[][],
    live: ReadonlyArray<readonly [string, number]>,
    now: number,
  ): boolean {
    keys.forEach((key, i) => {
      this.#counts.set(key, each[i] ?? []);
    });
    this.#live = new Map(live);
    const settling = this.#settling;
    if (settling === undefined) return false;
    if (settling.since === undefined) {
      settling.since = now;
      this.rollCall(); // their marks from now on
    }
    if (!this.#settled(settling.since, now)) return false;
    this.#stopSettling();
    return true;
  }

  /** Redis went away (or forgot this replica): the allowance is worked out from what was heard until now. */
  freeze(): void {
    // Already frozen (an outage again while settling): the older picture is the one from before
    // any of this, the newer one lacks the replicas that had not come back yet.
    if (this.#frozen !== undefined) return;
    this.#frozen = { counts: new Map(this.#counts), replicas: new Set(this.#live.keys()) };
  }

  /** Redis answers again, or this replica was re-registered: the allowance holds until the fleet settled. */
  settle(): void {
    this.freeze();
    if (this.#settling !== undefined) return;
    const poll = setInterval(this.beat, Math.max(50, Math.min(SETTLE_POLL_MS, heartbeatMs(this.leaseTtlMs))));
    poll.unref();
    this.#settling = { since: undefined, poll };
  }

  /** No settling after all (a policy without shares), or the store closes. */
  stop(): void {
    this.#stopSettling();
  }

  /**
   * What `others` a budget's room check must see under `local` so this replica grants only up to
   * its allowance: `limit − allowance`. `heard` is what the mirror had as the others' count (the
   * freshest sum: a grant's answer may be newer than the last heartbeat).
   */
  othersFor(key: string, limit: number, heard: number): number {
    return limit - this.allowance(key, limit, heard);
  }

  /**
   * While settling: whether a grant on `keys` (with `limits`, this call's) must wait, because this
   * replica already holds its allowance on one of them (`mine`: what it holds there).
   */
  holdsBack(keys: readonly string[], limits: readonly number[], mine: (key: string) => number): boolean {
    if (this.#settling === undefined) return false;
    for (let i = 0; i < keys.length; i++)
      if (mine(keys[i]!) + 1 > this.allowance(keys[i]!, limits[i]!, 0)) return true;
    return false;
  }

  /** Resolves when settling ends (at once when not settling). */
  settled(): Promise<void> {
    if (this.#settling === undefined) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** This replica's allowance on `key` (the rule above), from the frozen picture or, if none, the latest. */
  allowance(key: string, limit: number, heard: number): number {
    const floor = Math.floor(limit / this.replicas);
    const counts = (this.#frozen?.counts ?? this.#counts).get(key) ?? [];
    let known = 0;
    let entitled = 0;
    for (const c of counts) {
      known += c;
      entitled += Math.max(c, floor);
    }
    entitled += floor * Math.max(0, this.replicas - 1 - counts.length);
    entitled += Math.max(0, heard - known); // gained since the heartbeat: counted as beyond their share
    return Math.max(0, Math.min(Math.max(1, floor), limit - entitled));
  }

  /** Every replica heard before and every live one marked exact since `since`, or a lease passed. */
  #settled(since: number, now: number): boolean {
    if (now >= since + this.leaseTtlMs) return true;
    for (const [, mark] of this.#live) if (mark < since) return false;
    for (const replica of this.#frozen?.replicas ?? []) if (!this.#live.has(replica)) return false;
    return true;
  }

  #stopSettling(): void {
    if (this.#settling !== undefined) clearInterval(this.#settling.poll);
    this.#settling = undefined;
    this.#frozen = undefined;
    for (const resolve of this.#waiting.splice(0)) resolve();
  }
}
