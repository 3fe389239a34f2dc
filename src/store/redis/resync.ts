/**
 * When this replica's fields in Redis may be wrong although its lease lived on: a round trip
 * failed (Redis out of reach for less than `lease_ttl_s`, a release that never arrived or arrived
 * unanswered), or the connection dropped and ioredis resent what was in flight (a release or a
 * grant Redis may then run twice). The releases and grants of an outage are only in the local
 * mirror (`FleetMirror`'s own counts), so once Redis answers again the store rewrites every field
 * of this replica to what it holds: the heartbeat with its rewrite flag (`heartbeat.lua`), the
 * same write a replica Redis forgot makes when it re-registers.
 *
 * The rewrite must not erase a grant Redis ran before it whose answer is not counted here yet:
 * it is built only while no grant's answer is outstanding, and grants that arrive while it is due
 * wait for it (one round trip, once per outage). Releases need no such care: the local count
 * drops at the release, and a release reaches Redis before the rewrite (sent ahead of it on the
 * one connection: nothing left to subtract) or after it (not in the rewritten count).
 */
export class FleetResync {
  #stale = false;
  /** Counts the times the fields went stale: a rewrite built before the last one is not enough. */
  #generation = 0;
  /** Grants sent to Redis whose answer is not counted locally yet. */
  #outstanding = 0;
  #rewriting = false;
  readonly #waiting: Array<() => void> = [];

  constructor(
    /** Whether Redis answers now (the store's mode is `connected`). */
    readonly connected: () => boolean,
    /** Starts a heartbeat (it asks `begin` whether to rewrite). */
    readonly rewrite: () => void,
  ) {}

  /** This replica's fields in Redis may be wrong from now on. */
  stale(): void {
    this.#stale = true;
    this.#generation++;
  }

  /** Whether this replica's fields in Redis are what it holds (nothing failed since the last rewrite). */
  get exact(): boolean {
    return !this.#stale;
  }

  /** Whether a grant must wait for the rewrite before it asks Redis. */
  get due(): boolean {
    return this.#stale && this.connected();
  }

  /** Resolves when the rewrite is answered, or Redis is out of reach again. */
  wait(): Promise<void> {
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
      this.kick();
    });
  }

  /** A grant was sent to Redis. */
  sent(): void {
    this.#outstanding++;
  }

  /** A grant's answer is counted locally (or it failed): the rewrite may start. */
  answered(): void {
    this.#outstanding--;
    this.kick();
  }

  /** Starts the rewrite when it is due and no grant's answer is outstanding. */
  kick(): void {
    if (this.due && this.#outstanding === 0 && !this.#rewriting) this.rewrite();
  }

  /** A heartbeat is being built: the generation it rewrites, or undefined when it must not rewrite. */
  begin(): number | undefined {
    if (!this.due || this.#outstanding > 0) return undefined;
    this.#rewriting = true;
    return this.#generation;
  }

  /** The rewriting heartbeat `generation` was answered (`ok`) or failed. */
  done(generation: number, ok: boolean): void {
    this.#rewriting = false;
    if (ok && generation === this.#generation) this.#stale = false;
    this.wake();
  }

  /** Lets the waiting grants go on (the rewrite is answered, or Redis is out of reach again). */
  wake(): void {
    for (const resolve of this.#waiting.splice(0)) resolve();
  }
}
