/**
 * The fleet's token and request buckets and accounts' quota pauses, as this process mirrors them
 * (the metered half of the fleet store; `redis/mirror.ts` is the concurrency half).
 *
 * Redis holds each bucket as `{P}:r:<budget>` {level, t} and each account's pause as `{P}:q:<account>`
 * (a key with PX = the pause, in Redis time). Each process keeps a local `RateBudget` per bucket
 * that the scheduler's synchronous pass reserves on, so this process never over-reserves while it
 * waits for the fleet. The local level follows the fleet: every grant, settlement and heartbeat
 * answers the fleet's level, and the mirror is set to it less what this process has taken locally
 * and the fleet has not seen yet (`pending`). One connection carries every script, so answers
 * arrive in the order Redis ran them: whatever is pending when an answer arrives is exactly what
 * that answer has not counted.
 *
 * While Redis is down (`local` or `open`), what this process reserves and settles is kept as
 * `owed` and charged to the fleet's buckets when Redis answers again.
 */
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import type { AccountBudget } from "../../core/account.js";
import { reserveFor } from "../../core/budget.js";
import type { Path } from "../../core/path.js";
import type { Rank } from "../../core/priority.js";
import { RateBudget } from "../../core/rate-budget.js";
import * as script from "./script-calls.js";

/** The metered part of one call's path: what the grant script checks beside the concurrency budgets. */
export interface MeteredPart {
  /** Bucket keys, then pause keys. */
  keys: string[];
  buckets: RateBudget[];
  /** What the call takes from each bucket. */
  amounts: number[];
  /** Each bucket's capacity, the amount, and the level the call must leave (the grant script's arguments). */
  args: number[];
  /** The accounts whose pause keys follow the bucket keys. */
  paused: AccountBudget[];
}

/** Deltas for the settle script: one per bucket that moves. */
export interface Settlement {
  keys: string[];
  buckets: RateBudget[];
  /** The refill bound's change: a charge (< 0), or the refund the refill has not paid back. */
  deltas: number[];
  /**
   * What of each reservation went unused, refunded as far as the drawn bound allows
   * (`drawn-log.ts`); 0 for a charge, and the delta itself when only the refill bound may apply.
   */
  unused: number[];
  /** Ms from each grant to its settlement, on this process's clock (the script maps it to Redis's). */
  lags: number[];
  /** What each call used of its reservation (the drawn bound subtracts it: `DrawnLog.ceiling`). */
  spent: number[];
  /** Its id once sent: a copy re-sent with the same id is applied once (`settle.lua`). */
  id?: string;
}

/** How long Redis keeps the ids of the settlements a replica applied (a re-send comes sooner). */
const SETTLED_KEPT_MS = 24 * 3_600_000;

/** What the metered half needs of the store it serves: its connection and its outage state. */
export interface FleetLink {
  readonly client: Pick<Redis, "evalsha" | "eval" | "publish">;
  readonly replica: string;
  /** Whether Redis answers now (nothing is shared during an outage). */
  connected(): boolean;
  /** A round trip failed: enter the outage policy. */
  failed(): void;
  /** The scheduler's clock. */
  now(): number;
  /** Room or pauses changed: look at the waiters again. */
  changed(): void;
}

export class FleetRates {
  /** Lanes' buckets → their Redis key. */
  readonly #rates = new Map<RateBudget, string>();
  /** Accounts → the base of their keys (`account:NAME`); by base for messages from other replicas. */
  readonly #accounts = new Map<AccountBudget, string>();
  readonly #accountByKey = new Map<string, AccountBudget>();
  /** Taken locally, not yet in an answer from Redis. */
  readonly #pending = new Map<RateBudget, number>();
  /** This process's run, and the settlements it sent so far: together each settlement's id. */
  readonly #run = randomUUID().slice(0, 8);
  #sent = 0;
  /** Settlements that failed on the way, so may have run: re-sent under their ids. */
  readonly #uncertain: Settlement[] = [];
  /** Net reserved while Redis was unreachable: charged to the fleet when it answers again. */
  readonly #owed = new Map<RateBudget, number>();
  /** Each bucket's configured capacity and reserve while `local` divides them among the expected replicas. */
  readonly #fullCapacity = new Map<RateBudget, { perMinute: number; reserve: number }>();

  constructor(
    /** The hash tag every key starts with (`{prefix}`). */
    readonly tag: string,
  ) {}

  /** A lane's bucket stored under `key` (e.g. `tpm:lane:chat`). */
  trackRate(key: string, bucket: RateBudget): void {
    this.#rates.set(bucket, `${this.tag}:r:${key}`);
  }

  /** An account stored under `key` (`account:NAME`); false when it was tracked already. */
  trackAccount(key: string, account: AccountBudget): boolean {
    if (this.#accounts.has(account)) return false;
    this.#accounts.set(account, key);
    this.#accountByKey.set(key, account);
    return true;
  }

  /** The account stored under `key`, for another replica's message about it. */
  account(key: string): AccountBudget | undefined {
    return this.#accountByKey.get(key);
  }

  /** The Redis key of an account's quota pause. */
  pauseKey(key: string): string {
    return `${this.tag}:q:${key}`;
  }

  /**
   * The metered part of `path` from `from` on for a call of estimate `cost` and own class `rank`
   * (a call that is not interactive must leave each bucket's interactive reserve); null when it
   * has none.
   */
  part(path: Path, cost: number, from: number, rank: Rank): MeteredPart | null {
    if (path.metered.length === 0) return null;
    const part: MeteredPart = { keys: [], buckets: [], amounts: [], args: [], paused: [] };
    const pauses: string[] = [];
    this.#each(path, from, (key, bucket) => {
      const amount = bucket.amount(cost);
      part.keys.push(key);
      part.buckets.push(bucket);
      part.amounts.push(amount);
      part.args.push(bucket.perMinute, amount, this.#reserve(bucket, rank));
    });
    for (let i = from; i < path.budgets.length; i++) {
      const account = path.budgets[i] as AccountBudget;
      const base = this.#accounts.get(account);
      if (base === undefined) continue;
      pauses.push(this.pauseKey(base));
      part.paused.push(account);
    }
    if (part.keys.length === 0 && pauses.length === 0) return null;
    part.keys.push(...pauses);
    return part;
  }

  /** This process took `cost` locally on `path`'s buckets (from `from` on): pending until Redis answers. */
  took(path: Path, cost: number, from: number): void {
    if (path.metered.length === 0) return;
    this.#each(path, from, (_key, bucket) => {
      this.#pending.set(bucket, (this.#pending.get(bucket) ?? 0) + bucket.amount(cost));
    });
  }

  /**
   * The grant script answered for `part`: each bucket's fleet level, and each pause's ms left.
   * The call's amounts are no longer pending (they are in the fleet's levels if it was granted,
   * never taken if not), and the mirror follows: level = fleet level − what is still pending here.
   */
  confirmed(part: MeteredPart | null, answer: script.GrantAnswer, nowMs: number): void {
    if (part === null) return;
    this.#answered(part);
    this.#absorb(part.buckets, part.paused, answer, nowMs);
  }

  /** A grant confirmed without Redis (`local`, `open`): its local take stands, owed to the fleet. */
  unconfirmed(part: MeteredPart | null): true {
    if (part === null) return true;
    this.#answered(part);
    part.buckets.forEach((bucket, i) => {
      this.#addOwed(bucket, part.amounts[i]!);
    });
    return true;
  }

  /** A grant refused because Redis is out of reach (`closed`): the local reservation goes back in full. */
  unreached(part: MeteredPart | null, nowMs: number): void {
    if (part === null) return;
    this.#answered(part);
    part.buckets.forEach((bucket, i) => {
      bucket.restore(part.amounts[i]!, nowMs);
    });
  }

  /**
   * Settles a call's reservation on `path`'s buckets: here at once (the mirror), and returns the
   * deltas for the fleet's copies (null when nothing moves). The deltas are computed before the
   * capacity cap, which the settle script applies to the fleet's level.
   */
  settle(
    path: Path,
    reserved: number,
    used: number | null,
    nowMs: number,
    grantedAtMs: number,
  ): Settlement | null {
    const out: Settlement = { keys: [], buckets: [], deltas: [], unused: [], lags: [], spent: [] };
    this.#each(path, 0, (key, bucket) => {
      const delta = bucket.settlement(reserved, used, nowMs, grantedAtMs);
      const unused = bucket.unused(reserved, used);
      bucket.reconcile(reserved, used, nowMs, grantedAtMs);
      if (delta === 0 && unused === 0) return;
      out.keys.push(key);
      out.buckets.push(bucket);
      out.deltas.push(delta);
      out.unused.push(unused);
      out.lags.push(Math.max(0, nowMs - grantedAtMs));
      out.spent.push(bucket.amount(reserved) - unused);
    });
    return out.keys.length === 0 ? null : out;
  }

  /**
   * Applies `s` to the fleet's buckets in one script, fire-and-forget, and follows the levels it
   * answers. While Redis is out of reach it is owed instead. One that fails on the way may have
   * run (its answer lost): it is kept with its id and re-sent as it was once Redis answers
   * (`leaveOutage`), and Redis applies each id once — with the refill bound only: its lag was
   * measured when it was first sent, and a late copy would read the drawn bound at the wrong time.
   */
  send(s: Settlement, link: FleetLink): void {
    if (!link.connected()) {
      this.#oweSettlement(s);
      return;
    }
    const id = s.id ?? `${this.#run}:${++this.#sent}`;
    const rows = s.buckets.map(
      (b, i) => [this.#capacity(b), s.deltas[i]!, s.unused[i]!, s.lags[i]!, s.spent[i]!] as const,
    );
    const appliedKey = `${this.tag}:settled:${link.replica}`;
    script.settle(link.client, { appliedKey, id, keptMs: SETTLED_KEPT_MS, keys: s.keys, rows }).then(
      (levels) => this.#sync(s.buckets, levels, link.now()),
      () => {
        link.failed();
        this.#uncertain.push({ ...s, id, unused: s.deltas.map((d) => Math.max(0, d)) });
      },
    );
  }

  /** Every bucket and pause this process knows, for the heartbeat's resync (`levels.lua`). */
  all(): {
    bucketKeys: string[];
    caps: number[];
    pauseKeys: string[];
    buckets: RateBudget[];
    paused: AccountBudget[];
  } {
    const bucketKeys: string[] = [];
    const buckets = this.#buckets((key) => bucketKeys.push(key));
    const caps = buckets.map((b) => this.#capacity(b));
    const paused = [...this.#accounts.keys()];
    const pauseKeys = paused.map((a) => this.pauseKey(this.#accounts.get(a)!));
    return { bucketKeys, caps, pauseKeys, buckets, paused };
  }

  /** Re-reads the fleet's buckets and pauses into the local mirror (the heartbeat's resync). */
  async refresh(link: FleetLink): Promise<void> {
    const known = this.all();
    if (known.bucketKeys.length === 0 && known.pauseKeys.length === 0) return;
    this.#absorb(known.buckets, known.paused, await script.levels(link.client, known), link.now());
  }

  /** Redis is unreachable under `local`: each bucket keeps 1 ÷ `replicas` of its capacity here. */
  enterOutage(replicas: number, nowMs: number): void {
    for (const bucket of this.#buckets()) {
      if (this.#fullCapacity.has(bucket)) continue;
      const { perMinute, reserve } = bucket;
      this.#fullCapacity.set(bucket, { perMinute, reserve });
      // The interactive reserve is divided with the capacity: each replica keeps its share of both.
      const share = Math.max(1, Math.floor(perMinute / replicas));
      bucket.reconfigure(share, nowMs, Math.min(Math.floor(reserve / replicas), share - 1));
    }
  }

  /**
   * Redis answers again: capacities back to the configured ones, and what was reserved meanwhile
   * as one settlement to charge the fleet, after the settlements that failed on the way (each
   * re-sent under its id); empty when nothing is owed.
   */
  leaveOutage(nowMs: number): Settlement[] {
    for (const [bucket, full] of this.#fullCapacity) bucket.reconfigure(full.perMinute, nowMs, full.reserve);
    this.#fullCapacity.clear();
    const out: Settlement = { keys: [], buckets: [], deltas: [], unused: [], lags: [], spent: [] };
    const keyOf = new Map<RateBudget, string>();
    for (const bucket of this.#buckets((key, b) => keyOf.set(b, key))) {
      const owed = this.#owed.get(bucket) ?? 0;
      if (owed === 0) continue;
      out.keys.push(keyOf.get(bucket)!);
      out.buckets.push(bucket);
      out.deltas.push(-owed);
      out.unused.push(Math.max(0, -owed));
      out.lags.push(0);
      out.spent.push(0);
    }
    this.#owed.clear();
    // The ones that may have run first, each under its own id; then what surely did not.
    const due = this.#uncertain.splice(0);
    if (out.keys.length > 0) due.push(out);
    return due;
  }

  #answered(part: MeteredPart): void {
    part.buckets.forEach((bucket, i) => {
      this.#pending.set(bucket, Math.max(0, (this.#pending.get(bucket) ?? 0) - part.amounts[i]!));
    });
  }

  /** The fleet's levels of `buckets`, and ms left of each of `paused`'s pauses. */
  #absorb(
    buckets: readonly RateBudget[],
    paused: readonly AccountBudget[],
    fleet: script.LevelsAnswer,
    nowMs: number,
  ): void {
    this.#sync(buckets, fleet.levels, nowMs);
    paused.forEach((account, p) => {
      const left = fleet.pausesLeftMs[p] ?? 0;
      if (left > 0) account.quotaUntil = Math.max(account.quotaUntil, nowMs + left);
    });
  }

  #oweSettlement(s: Settlement): void {
    s.buckets.forEach((bucket, i) => {
      this.#addOwed(bucket, -s.deltas[i]!);
    });
  }

  #sync(buckets: readonly RateBudget[], levels: readonly number[], nowMs: number): void {
    buckets.forEach((bucket, j) => {
      const level = levels[j]!;
      if (Number.isFinite(level)) bucket.sync(level - (this.#pending.get(bucket) ?? 0), nowMs);
    });
  }

  #addOwed(bucket: RateBudget, amount: number): void {
    this.#owed.set(bucket, (this.#owed.get(bucket) ?? 0) + amount);
  }

  /** The fleet's capacity of `bucket`: the configured one, also while `local` divides it here. */
  #capacity(bucket: RateBudget): number {
    return this.#fullCapacity.get(bucket)?.perMinute ?? bucket.perMinute;
  }

  /** What a call of own class `rank` must leave in the fleet's `bucket`: its configured interactive reserve, 0 for interactive. */
  #reserve(bucket: RateBudget, rank: Rank): number {
    return reserveFor(rank, this.#fullCapacity.get(bucket)?.reserve ?? bucket.reserve);
  }

  /** Each fleet bucket on `path` from `from` on, with its key: lanes' buckets and accounts' buckets. */
  #each(path: Path, from: number, visit: (key: string, bucket: RateBudget) => void): void {
    const budgets = path.budgets;
    for (let i = from; i < budgets.length; i++) {
      const b = budgets[i]!;
      if (b.reconcile === undefined) continue;
      if (b instanceof RateBudget) {
        const key = this.#rates.get(b);
        if (key !== undefined) visit(key, b);
      } else if (this.#accounts.has(b as AccountBudget)) this.#accountBuckets(b as AccountBudget, visit);
    }
  }

  #accountBuckets(account: AccountBudget, visit: (key: string, bucket: RateBudget) => void): void {
    const base = this.#accounts.get(account)!;
    if (account.tokens !== null) visit(`${this.tag}:r:${base}:tokens`, account.tokens);
    if (account.requests !== null) visit(`${this.tag}:r:${base}:requests`, account.requests);
  }

  /** Every bucket this process knows (visiting each with its key when asked). */
  #buckets(visit?: (key: string, bucket: RateBudget) => void): RateBudget[] {
    const out: RateBudget[] = [];
    const each = (key: string, bucket: RateBudget) => {
      out.push(bucket);
      visit?.(key, bucket);
    };
    for (const [bucket, key] of this.#rates) each(key, bucket);
    for (const account of this.#accounts.keys()) this.#accountBuckets(account, each);
    return out;
  }
}
