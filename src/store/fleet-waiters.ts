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
 */
import type { Budget } from "../core/budget.js";
import type { Lane } from "../core/lane.js";
import type { Ticket } from "../core/lease.js";
import { effectiveRank, type Rank } from "../core/priority.js";
import type { FleetLink } from "./fleet-rates.js";
import { runScript } from "./redis-scripts.js";

/** Waiters per effective class (interactive, default, bulk) on one lane budget. */
export type ClassCounts = [number, number, number];

/** Where the counts come from: the Governor's lanes and the grants it is confirming. */
export type WaitingSource = () => Iterable<[Budget, ClassCounts]>;

export class FleetWaiters {
  #source: WaitingSource | null = null;
  /** What Redis has from this replica, per waiters key ("i d b"). */
  readonly #sent = new Map<string, string>();
  #scheduled = false;

  constructor(
    readonly link: FleetLink,
    /** The waiters key of a budget this store shares, or undefined. */
    readonly keyOf: (budget: Budget) => string | undefined,
    /** The channel a drop in the counts is published on. */
    readonly channel: string,
    readonly ttlMs: number,
    /** The waiting index (`{P}:waiting`): releases publish only while another replica is in it. */
    readonly indexKey: string,
    /**
     * This replica starts waiting: releases sent before its index entry was written published
     * nothing, so the fleet's counts are read again. Called right after the advertisement is
     * sent, on the same connection: Redis runs the read after the entry is in.
     */
    readonly startedWaiting: () => void,
  ) {}

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
    const now = new Map<string, string>();
    for (const [budget, counts] of source()) {
      const key = this.keyOf(budget);
      if (key === undefined || counts[0] + counts[1] + counts[2] === 0) continue;
      const old = now.get(key);
      const sum = old === undefined ? counts : sumOf(old, counts);
      now.set(key, sum.join(" "));
    }
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
    const sent = runScript(
      this.link.client,
      "advertise",
      [this.indexKey, ...keys],
      [this.link.replica, this.channel, this.ttlMs, now.size > 0 ? "1" : "0", ...values],
    );
    if (started) this.startedWaiting();
    try {
      await sent;
    } catch {
      // Not written: the next write sends these again (the heartbeat writes all of them).
      this.#sent.clear();
      for (const [key, value] of before) this.#sent.set(key, value);
      this.link.failed();
    }
  }
}

function sumOf(text: string, counts: ClassCounts): ClassCounts {
  const [a = 0, b = 0, c = 0] = text.split(" ").map(Number);
  return [a + counts[0], b + counts[1], c + counts[2]];
}

/**
 * What a replica waits for on each lane's budget, per effective class (aging included): queued
 * calls, plus the grants still being confirmed with the fleet (they wait until Redis says yes,
 * and counting them keeps the advertisement steady while a grant is asked).
 */
export function* waitingByLane(
  lanes: Iterable<Lane<Ticket>>,
  confirming: Iterable<Ticket>,
  nowMs: number,
): Iterable<[Budget, ClassCounts]> {
  const pending = new Map<Lane<Ticket>, ClassCounts>();
  for (const t of confirming) {
    const counts = pending.get(t.laneRef) ?? [0, 0, 0];
    counts[effectiveRank(t.rank, t.arrivedAt, nowMs, t.laneRef.settings.agingMs)]! += 1;
    pending.set(t.laneRef, counts);
  }
  for (const lane of lanes) {
    const counts = pending.get(lane) ?? [0, 0, 0];
    const queue = lane.queue;
    if (queue.size === 0 && counts[0] + counts[1] + counts[2] === 0) continue;
    for (let r = 0; r <= 2; r++) {
      const rank = r as Rank;
      let aged = 0;
      // Each class's list is in arrival order, so its aged waiters are a prefix of it.
      for (const n of queue.waiting(rank)) {
        const eff = effectiveRank(n.rank, n.arrivedAt, nowMs, lane.settings.agingMs);
        if (eff === rank) break;
        counts[eff]! += 1;
        aged++;
      }
      counts[rank] += queue.count(rank) - aged;
    }
    yield [lane.budget, counts];
  }
}
