/**
 * Per-key bounds across a fleet (`auth.keys[].max_inflight`): a key's calls in flight plus
 * queued, on every replica together, stay within its bound.
 *
 * Redis counts each key as other budgets are counted — a hash `{P}:b:key:<name>` with one field
 * per replica, under the replica's lease, given back by `release.lua`, rewritten after an outage
 * — but a key's slot is taken when the call *arrives*, granted at once or queued, and held until
 * it ends or leaves its queue. The arrivals of one event-loop turn are one `arrive.lua` call, sent
 * in the turn's write with its grants (one round trip). The synchronous checks refuse first from
 * this replica's mirror of the fleet (`FleetKeyBudget.others`), so a key the fleet has filled is
 * refused before the body is read; an arrival that passed them but that Redis refuses (another
 * replica took the last slot meanwhile) is ended with `KeyLimitError` before its caller gets a
 * lease (`Waiters.arrived`). So Redis alone decides, and the fleet never holds more than the bound.
 *
 * Given back: when a call ends or leaves its queue the local counts drop; once per turn (after a
 * `give` or a waiter leaving) what this replica holds in Redis beyond its local counts — less the
 * arrivals still being asked — goes back in the turn's releases.
 */

import type { ArrivalBudget } from "../../core/budget.js";
import { KeyLimitError, StoreUnavailableError } from "../../core/errors.js";
import { INTERACTIVE, type Rank } from "../../core/priority.js";
import { MIN_RETRY_AFTER_MS } from "../../core/retry-after.js";
import { FleetKeyBudget } from "./key-budget.js";
import type { FleetMirror } from "./mirror.js";
import type { FleetLink } from "./rates.js";
import type { FleetReleases } from "./releases.js";
import type { FleetResync } from "./resync.js";
import * as script from "./script-calls.js";
import { isReplyCode } from "./scripts.js";

interface Arrival {
  readonly budget: FleetKeyBudget;
  resolve(): void;
  reject(error: unknown): void;
}

/** What the keys need of the store beyond its link. */
export interface FleetKeysContext {
  readonly link: FleetLink;
  readonly mirror: FleetMirror;
  readonly releases: FleetReleases;
  readonly resync: FleetResync;
  readonly replicasKey: string;
  /** The outage policy in force while Redis does not answer. */
  readonly policy: "local" | "open" | "closed";
  /** Writes back what this replica holds when Redis has forgotten it (the heartbeat). */
  reRegister(): Promise<void>;
  /**
   * Settling after an outage or a flush (`redis/shares.ts`): whether `n` more arrivals on the key
   * stored under `key` (bound `limit`) would take this replica past its share, and when settling ends.
   */
  readonly settling?: {
    holds(key: string, limit: number, n: number): boolean;
    settled(): Promise<void>;
  };
}

export class FleetKeys {
  /** Each key's budget by its store key (`key:team`), and each budget's Redis key. */
  readonly #byName = new Map<string, FleetKeyBudget>();
  readonly #keyOf = new Map<FleetKeyBudget, string>();
  #asked: Arrival[] = [];
  /** Arrivals not answered by Redis yet, per key: counted locally, not yet in `mine`. */
  readonly #pending = new Map<FleetKeyBudget, number>();
  #touched = false;

  constructor(readonly context: FleetKeysContext) {}

  /** The bounded key stored under `key` (`key:team`), created on first use and counted by the fleet. */
  budget(key: string, limit: number, maxRank: Rank = INTERACTIVE, name = key): FleetKeyBudget {
    let budget = this.#byName.get(key);
    if (budget === undefined) {
      budget = this.context.mirror.track(key, new FleetKeyBudget(name, limit, maxRank));
      this.#byName.set(key, budget);
      this.#keyOf.set(budget, `${this.context.mirror.tag}:b:${key}`);
    }
    return budget;
  }

  /** Every key budget (the store's `budgets()`). */
  all(): Iterable<FleetKeyBudget> {
    return this.#byName.values();
  }

  /**
   * Takes one slot of `budget` in Redis for an arrival; rejects with the refusal. Undefined for a
   * key without a bound (nothing to count).
   */
  arrive(budget: ArrivalBudget): Promise<void> | undefined {
    if (!(budget instanceof FleetKeyBudget) || budget.limit >= Number.MAX_SAFE_INTEGER) return undefined;
    this.#pending.set(budget, (this.#pending.get(budget) ?? 0) + 1);
    return new Promise((resolve, reject) => {
      // Sent with the turn's write (`flush`, called first there), or at the turn's end.
      if (this.#asked.push({ budget, resolve, reject }) === 1) process.nextTick(() => this.flush());
    });
  }

  /** Sends the turn's arrivals, one script for all (from the turn's write). */
  flush(): void {
    const asked = this.#asked;
    if (asked.length === 0) return;
    this.#asked = [];
    void this.#send(asked);
  }

  /** A call may have ended or left its queue: the slots this replica no longer holds go back (once per turn). */
  touch(): void {
    if (this.#byName.size === 0 || this.#touched) return;
    this.#touched = true;
    process.nextTick(() => {
      this.#touched = false;
      this.#giveBack();
    });
  }

  async #send(asked: Arrival[]): Promise<void> {
    const { link, resync } = this.context;
    // After an outage this replica's counts are rewritten first (as a grant waits for it).
    while (resync.due) await resync.wait();
    const counts = new Map<FleetKeyBudget, number>();
    for (const a of asked) counts.set(a.budget, (counts.get(a.budget) ?? 0) + 1);
    const budgets = [...counts.keys()];
    const keys = budgets.map((b) => this.#keyOf.get(b)!);
    // Redis may not count the other replicas' calls on these keys yet: past this replica's share,
    // the arrivals wait until it does (one round trip after the others' roll call, usually).
    const { settling } = this.context;
    if (settling !== undefined)
      while (budgets.some((b, i) => settling.holds(keys[i]!, b.limit, counts.get(b)!)))
        await settling.settled();
    if (!link.connected()) return this.#unreached(asked, counts, keys);
    const request = {
      ...{ replicasKey: this.context.replicasKey, replica: link.replica, keys },
      ...{ asked: budgets.map((b) => counts.get(b)!), bounds: budgets.map((b) => b.limit) },
    };
    const run = () => script.arrive(link.client, request);
    resync.sent();
    let reply: script.ArriveAnswer[];
    try {
      reply = await run().catch(async (error: unknown) => {
        if (!isReplyCode(error, "SLUICE_UNKNOWN_REPLICA")) throw error;
        await this.context.reRegister();
        return run();
      });
    } catch {
      link.failed();
      resync.answered();
      return this.#unreached(asked, counts, keys);
    }
    const taken = new Map<FleetKeyBudget, number>();
    budgets.forEach((b, i) => {
      const { taken: granted, others } = reply[i]!;
      b.others = others;
      taken.set(b, granted);
      this.context.mirror.confirmed([keys[i]!], granted);
      this.#answered(b, counts.get(b)!);
    });
    resync.answered();
    for (const a of asked) {
      const left = taken.get(a.budget)!;
      taken.set(a.budget, left - 1);
      if (left > 0) a.resolve();
      else a.reject(this.#refusal(a.budget));
    }
    this.touch(); // a call that ended while its arrival was asked: its slot goes back now
  }

  /** Redis did not answer: `local` and `open` hold the arrivals here (the rewrite writes them), `closed` refuses. */
  #unreached(asked: Arrival[], counts: Map<FleetKeyBudget, number>, keys: string[]): void {
    const closed = this.context.policy === "closed";
    [...counts].forEach(([b, n], i) => {
      if (!closed) this.context.mirror.confirmed([keys[i]!], n);
      this.#answered(b, n);
    });
    for (const a of asked)
      if (closed)
        a.reject(new StoreUnavailableError(`fleet store unreachable: key ${a.budget.name} not taken`));
      else a.resolve();
    this.touch();
  }

  #answered(budget: FleetKeyBudget, n: number): void {
    this.#pending.set(budget, Math.max(0, (this.#pending.get(budget) ?? 0) - n));
  }

  /** The fleet's refusal: this replica's calls, and the other replicas' as Redis counted them. */
  #refusal(budget: FleetKeyBudget): KeyLimitError {
    // No lane yet, so no drain rate: the floor (a key's slot frees when any of its calls ends).
    return new KeyLimitError(
      budget.name,
      budget.inflight,
      budget.queued,
      budget.limit,
      MIN_RETRY_AFTER_MS,
      budget.others,
    );
  }

  #giveBack(): void {
    const { mirror, releases, link } = this.context;
    for (const [b, key] of this.#keyOf) {
      const held = b.inflight + b.queued - (this.#pending.get(b) ?? 0);
      const extra = mirror.mine(key) - Math.max(0, held);
      if (extra <= 0) continue;
      mirror.confirmed([key], -extra);
      // While Redis is away nothing is sent: the rewrite after the outage has the count.
      if (link.connected()) releases.add([key], extra);
    }
  }
}
