/**
 * Priority across replicas (DESIGN §5): each replica advertises how many waiters it has on each
 * lane budget, per effective class, in `{P}:w:<budget>` (field = replica id), so the grant script
 * of another replica leaves room for better waiters it cannot see (`grant-path.lua`).
 *
 * Written by `advertise.lua`, coalesced to at most one round trip per event-loop turn and only
 * for the budgets whose counts changed; the heartbeat re-writes every count (a flushed Redis gets
 * them back, aging is reflected at the latest then). A count that went down publishes on the
 * waiters channel: a replica that held back for those waiters looks again at once. The fields
 * of a dead replica stop counting with its lease, as its calls do.
 *
 * A replica that waits also looks at the fleet again when the soonest lease of another replica
 * ends (each write's answer says when, in Redis time): a replica killed while holding slots
 * publishes nothing, and its slots count until its lease ends, so that is when the waiters here
 * can have them — not up to a heartbeat (`lease_ttl_s ÷ 3`) later (issue 22, defect 2). A live
 * replica renews its lease before then, and the look only finds the lease moved on.
 */
import type { Budget } from "../../core/budget.js";
import type { LaneWaiting } from "../../core/lane-waiting.js";
import { flowJoined, LaneAdvert } from "./flow-advert.js";
import type { FleetLink } from "./rates.js";
import * as script from "./script-calls.js";

export type { ClassCounts } from "../../core/lane-waiting.js";

/** Where the counts come from: the Governor's lanes and the grants it is confirming. */
export type WaitingSource = () => Iterable<LaneWaiting>;

/** How long after a lease's end (Redis time) the look at the fleet goes: past it, not at it. */
const LEASE_END_MARGIN_MS = 5;

export class FleetWaiters {
  #source: WaitingSource | null = null;
  /** What Redis has from this replica, per waiters key ("i d b"). */
  readonly #sent = new Map<string, string>();
  #scheduled = false;
  /** The look at the fleet when another replica's lease ends, and when it is due (local ms). */
  #leaseEnd: NodeJS.Timeout | undefined;
  #leaseEndAt = Number.POSITIVE_INFINITY;
  #stopped = false;
  /** The channel a drop in the counts is published on (`{P}:waiters`). */
  readonly channel: string;
  /** The waiting index (`{P}:waiting`): releases publish only while another replica is in it. */
  readonly indexKey: string;
  /** The replicas' leases (`{P}:replicas`). */
  readonly replicasKey: string;

  constructor(
    readonly link: FleetLink,
    /** The waiters key of a budget this store shares, or undefined. */
    readonly keyOf: (budget: Budget) => string | undefined,
    /** The hash tag every key starts with (`{prefix}`). */
    tag: string,
    readonly ttlMs: number,
    /**
     * Re-reads the fleet's counts (the store's heartbeat script without the rest). Called as this
     * replica starts waiting — releases sent before its index entry was written published
     * nothing; right after the advertisement is sent, on the same connection, so Redis runs the
     * read after the entry is in — and when another replica's lease ends while it waits.
     */
    readonly reRead: () => void,
  ) {
    this.channel = `${tag}:waiters`;
    this.indexKey = `${tag}:waiting`;
    this.replicasKey = `${tag}:replicas`;
  }

  /**
   * A flow started waiting on the lane budget whose waiters hash is `waitKey`, and Redis has the
   * advertisement that says so: this replica's weighted share there grew (flow-advert.ts), so the
   * floor it held back to goes and it asks again (the store wires it to the mirror's hold-back).
   * Without it the larger share showed only in the answer to its next grant, asked when one of
   * its own calls ended.
   */
  onFlowJoined: (waitKey: string) => void = () => {};

  /** The store closes: no more looks at leases' ends. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#leaseEnd);
    this.#leaseEnd = undefined;
  }

  /** The Governor's waiting calls, read at each write. */
  watch(source: WaitingSource): void {
    this.#source = source;
  }

  /** The waiters changed somewhere: write what changed, once, after this event-loop turn. */
  changed(): void {
    if (this.#scheduled || this.#source === null) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      void this.write(false);
    });
  }

  /** Writes the counts that changed since the last write, or every count (`all`: the heartbeat). */
  async write(all: boolean): Promise<void> {
    const source = this.#source;
    if (source === null || !this.link.connected()) return;
    const adverts = new Map<string, LaneAdvert>();
    for (const waiting of source()) {
      const key = this.keyOf(waiting.budget);
      if (key === undefined) continue;
      let advert = adverts.get(key);
      if (advert === undefined) {
        advert = new LaneAdvert();
        adverts.set(key, advert);
      }
      advert.add(waiting);
    }
    const now = new Map<string, string>();
    for (const [key, advert] of adverts) if (!advert.empty) now.set(key, advert.encode());
    const keys: string[] = [];
    const values: string[] = [];
    for (const [key, value] of now)
      if (all || this.#sent.get(key) !== value) {
        keys.push(key);
        values.push(value);
      }
    for (const key of this.#sent.keys())
      if (!now.has(key)) {
        keys.push(key);
        values.push("");
      }
    if (keys.length === 0) return;
    const before = new Map(this.#sent);
    const started = before.size === 0 && now.size > 0;
    this.#sent.clear();
    for (const [key, value] of now) this.#sent.set(key, value);
    const { indexKey, replicasKey, channel, ttlMs } = this;
    const sent = script.advertise(this.link.client, {
      ...{ indexKey, replicasKey, replica: this.link.replica, channel, ttlMs },
      ...{ waiting: now.size > 0, keys, values },
    });
    if (started) this.reRead();
    try {
      const answer = await sent;
      if (now.size > 0) this.#lookAtLeaseEnd(answer.soonestLeaseEndMs);
      // The portions of this replica's flows that wait elsewhere too (flow-advert.ts).
      for (let i = 0; i < keys.length; i++) adverts.get(keys[i]!)?.applySpreads(answer.spreads[i] ?? "");
      for (let i = 0; i < keys.length; i++)
        if (flowJoined(before.get(keys[i]!), values[i]!)) this.onFlowJoined(keys[i]!);
    } catch {
      // Not written: the next write sends these again (the heartbeat writes all of them).
      this.#sent.clear();
      for (const [key, value] of before) this.#sent.set(key, value);
      this.link.failed();
    }
  }

  /**
   * Another replica's lease ends in `inMs` (-1: there is none): look at the fleet just after, if
   * this replica still waits then — unless an earlier look is set already.
   */
  #lookAtLeaseEnd(inMs: number): void {
    if (inMs < 0 || this.#stopped) return;
    const at = Date.now() + inMs + LEASE_END_MARGIN_MS;
    if (this.#leaseEnd !== undefined && this.#leaseEndAt <= at) return;
    clearTimeout(this.#leaseEnd);
    this.#leaseEndAt = at;
    this.#leaseEnd = setTimeout(() => {
      this.#leaseEnd = undefined;
      this.#leaseEndAt = Number.POSITIVE_INFINITY;
      if (this.#sent.size === 0 || this.#stopped) return; // nobody waits here any more
      this.reRead(); // the counts, without the dead replica's calls
      void this.write(true); // and the next lease's end
    }, inMs + LEASE_END_MARGIN_MS);
    this.#leaseEnd.unref();
  }
}
