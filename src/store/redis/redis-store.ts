/**
 * The fleet store: several processes (gateway replicas, `--workers`, library users) share every
 * budget through Redis, so together they never hold more than a budget's limit. Token and request
 * buckets and accounts' pauses are the metered half (`redis/rates.ts`, `redis/accounts.ts`).
 *
 * Each process keeps a local mirror of the fleet: its own calls (`inflight`) and what the other
 * replicas held when it last heard (`others`). A grant is two steps. `take` checks and takes the
 * mirror at once, in the scheduler's synchronous pass, so this process never over-grants while it
 * waits; `confirm` then runs one script over every fleet budget of the path (one round trip,
 * Redis time, all or nothing: `redis/confirm.ts`). A refusal rolls the local take back and refreshes the mirror from
 * the script's answer, so the waiter stays queued until a release somewhere frees room: releases
 * publish the budgets they freed while another replica waits (`redis/releases.ts`), a replica that
 * starts waiting re-reads the fleet, and every heartbeat does (the polling fallback).
 *
 * Crash safety: a replica's counts live under its lease, renewed by a heartbeat every
 * `leaseTtlMs ÷ 3` (`redis/heartbeat.ts`); a killed replica's counts stop counting within the TTL. A Redis that lost its
 * data is re-initialised by the next heartbeat (each replica writes back what it holds).
 *
 * Store outage (`onStoreError`): `local` divides each fleet limit by `expectedReplicas` and goes on
 * in memory; `open` drops the fleet bound; `closed` refuses with `StoreUnavailableError`. Left at
 * the next good round trip; this replica's fields are then rewritten to what it holds
 * (`redis/resync.ts`). Per-key bounds: `redis/keys.ts`.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { AccountBudget, AccountSettings } from "../../core/account.js";
import type { AdmissionBudget } from "../../core/admission.js";
import type { ArrivalBudget, Budget, ConcurrencyBudget } from "../../core/budget.js";
import { type Clock, systemClock } from "../../core/clock.js";
import { Emitter, type Event } from "../../core/events.js";
import { resolveFleetOptions } from "../../core/fleet-options.js";
import type { Path } from "../../core/path.js";
import type { SharedPodState } from "../../core/pod.js";
import type { Rank } from "../../core/priority.js";
import type { RateBudget, RateUnit } from "../../core/rate-budget.js";
import type { FleetStore } from "../../core/store.js";
import { MemoryStore } from "../memory.js";
import { FleetAccounts } from "./accounts.js";
import { type BatchedClient, turnPipelined } from "./batch.js";
import { FleetConfirm } from "./confirm.js";
import {
  type FleetConnection,
  fleetConnections,
  redactStoreUrl as redactedUrl,
  startOrClose,
  subscribeKept,
} from "./connection.js";
import { FleetGrants } from "./grant.js";
import { FleetHeartbeat } from "./heartbeat.js";
import { FleetKeys } from "./keys.js";
import { routeMessages } from "./messages.js";
import { FleetMirror } from "./mirror.js";
import type { FleetStatus, OnStoreError, RedisStoreOptions } from "./options.js";
import { FleetOutage } from "./outage.js";
import { FleetPods } from "./pods.js";
import { type FleetLink, FleetRates } from "./rates.js";
import { FleetReleases } from "./releases.js";
import { FleetResync } from "./resync.js";
import { FleetWaiters, type WaitingSource } from "./waiters.js";

export type { FleetStatus, OnStoreError, RedisStoreOptions } from "./options.js";

export class RedisStore implements FleetStore {
  readonly description: string;
  readonly fleet = true;
  readonly countsInPlace = false; // every take is mirrored and confirmed
  readonly replica: string;
  readonly #local = new MemoryStore();
  readonly #mirror: FleetMirror;
  readonly #rates: FleetRates;
  /** The clock answers from Redis are read on: the Governor's (`useClock`). */
  #clock: Clock = systemClock;
  readonly #client: FleetConnection;
  readonly #batched: BatchedClient; // #client's scripts, one write per event-loop turn (not ioredis's)
  readonly #subscriber: FleetConnection;
  readonly #ttlMs: number;
  readonly #policy: OnStoreError;
  readonly #replicas: number;
  /** The replicas set and this replica's id in it, as every grant names them. */
  readonly #lease: { replicasKey: string; replica: string };
  readonly #changes = new Emitter<void>();
  readonly #storeErrors = new Emitter<void>();
  readonly #accounts: FleetAccounts;
  readonly #pods: FleetPods;
  readonly #waiters: FleetWaiters;
  readonly #releases: FleetReleases;
  readonly #grants: FleetGrants;
  readonly #resync: FleetResync;
  readonly #keys: FleetKeys;
  readonly #link: FleetLink;
  readonly #outage: FleetOutage; // the mode, `local`'s shares, the settling after an outage
  readonly #settleChannel: string;
  readonly #confirm: FleetConfirm; // a grant's second step: the fleet's take of the mirror's
  readonly #heartbeat: FleetHeartbeat; // the lease renewed every third of its TTL, and the polling fallback

  /** A round trip to Redis failed (`sluice_store_errors_total`). */
  readonly onError: Event<void> = this.#storeErrors.event;
  /** Other replicas may have freed room: re-run a pass. */
  readonly onChange: Event<void> = this.#changes.event;
  /** Another replica changed a pod's width, breaker or quota pause (or its kept state was read). */
  readonly onPodState: Event<{ id: string; state: SharedPodState }>;

  constructor(options: RedisStoreOptions) {
    // Every default from core/defaults.ts, checked as the config's `fleet:` section is.
    const fleet = resolveFleetOptions(options);
    this.description = redactedUrl(options.url);
    this.replica = options.replica ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.#ttlMs = fleet.leaseTtlMs;
    this.#policy = fleet.onStoreError;
    this.#replicas = fleet.expectedReplicas;
    const tag = `{${fleet.prefix}}`;
    this.#lease = { replicasKey: `${tag}:replicas`, replica: this.replica };
    this.#settleChannel = `${tag}:settle`; // a settling replica's roll call (`redis/shares.ts`)
    this.#mirror = new FleetMirror(tag, () => this.#changes.emit()); // room grew: look again
    this.#rates = new FleetRates(tag);
    [this.#client, this.#subscriber] = fleetConnections(options.url, this.#ttlMs);
    this.#batched = turnPipelined(this.#client, () => {
      this.#keys.flush();
      this.#grants.flush();
      void this.#releases.flush();
    });
    const schedule = () => process.nextTick(() => this.#grants.flush());
    this.#grants = new FleetGrants(this.#batched, schedule, () => this.heartbeat());
    const link: FleetLink = {
      client: this.#batched,
      replica: this.replica,
      connected: () => this.#outage.mode === "connected",
      failed: () => this.#outage.failed(),
      now: () => this.#clock.now(),
      changed: () => this.#changes.emit(),
    };
    this.#link = link;
    this.#accounts = new FleetAccounts(link, this.#rates, `${tag}:accounts`);
    this.#pods = new FleetPods(link, tag, `${tag}:pods`);
    this.onPodState = this.#pods.onState;
    const waitKey = (budget: Budget) => this.#mirror.waitKey(budget);
    this.#waiters = new FleetWaiters(link, waitKey, tag, this.#ttlMs, () => this.#heartbeat.beat(false));
    this.#waiters.onFlowJoined = (key) => this.#mirror.shareGrew(key);
    this.#releases = new FleetReleases(link, `${tag}:waiting`, `${tag}:released`);
    this.#resync = new FleetResync(link.connected, () => void this.#heartbeat.beat(false));
    this.#outage = new FleetOutage({
      ...{ policy: this.#policy, replicas: this.#replicas, leaseTtlMs: this.#ttlMs, link },
      ...{ mirror: this.#mirror, rates: this.#rates, accounts: this.#accounts, resync: this.#resync },
      releases: this.#releases,
      errored: () => this.#storeErrors.emit(),
      beat: () => void this.#heartbeat.beat(false),
      rollCall: () => void this.#client.publish(this.#settleChannel, this.replica).catch(() => {}),
    });
    const [mirror, releases, resync, policy] = [this.#mirror, this.#releases, this.#resync, this.#policy];
    // Re-registers when Redis forgot this replica; an arrival past its share waits while settling.
    const own = { reRegister: () => this.heartbeat(), settling: this.#outage.keySettling };
    this.#keys = new FleetKeys({ link, mirror, releases, resync, policy, ...own, ...this.#lease });
    this.#confirm = new FleetConfirm({
      ...{ grants: this.#grants, mirror, rates: this.#rates, releases, resync, outage: this.#outage },
      ...{ lease: this.#lease, description: this.description, now: () => this.#clock.now() },
    });
    this.#heartbeat = new FleetHeartbeat({
      ...{
        client: this.#batched,
        lease: this.#lease,
        leaseTtlMs: this.#ttlMs,
        heartbeatMs: fleet.heartbeatMs,
      },
      ...{ link, mirror, rates: this.#rates, releases, resync, outage: this.#outage },
      ...{ waiters: this.#waiters, pods: this.#pods, changed: () => this.#changes.emit() },
    });
    this.#client.on("error", () => {}); // surfaced as failed commands, counted in status()
    // A dropped connection: ioredis resends what was in flight once it reconnects, and a script
    // Redis ran before the drop runs twice. This replica's fields are rewritten (`redis/resync.ts`).
    this.#client.on("close", () => this.#resync.stale());
    // Back from an outage at once, not at the next heartbeat: until then this replica grants
    // locally while the others already ask a Redis that does not count its calls.
    this.#client.on("ready", () => this.#outage.mode !== "connected" && void this.heartbeat());
    this.#subscriber.on("error", () => {});
    routeMessages(this.#subscriber, {
      ...{ pods: this.#pods, accounts: this.#accounts, waiters: this.#waiters, mirror },
      settle: { channel: this.#settleChannel, beat: () => void this.#heartbeat.beat(false) },
      ...{ replica: this.replica, changes: this.#changes },
    });
  }

  /**
   * Connects, registers this replica and starts its heartbeat. Rejects with
   * `StoreUnavailableError` naming the store (password hidden) when Redis cannot be reached in
   * time, both connections closed (`startOrClose`).
   */
  start(): Promise<void> {
    return startOrClose([this.#client, this.#subscriber], this.#ttlMs, this.description, () =>
      this.#connect(),
    );
  }

  async #connect(): Promise<void> {
    await Promise.all([this.#client.connect(), this.#subscriber.connect()]);
    const channels = [this.#pods.channel, this.#waiters.channel, this.#accounts.channel, this.#settleChannel];
    await subscribeKept(this.#subscriber, [this.#releases.channel, ...channels]); // and after reconnects
    await this.heartbeat(); // reads the kept state of the pods served, too
    if (this.#client.status === "end") return; // the start gave up meanwhile (its deadline passed)
    this.#heartbeat.start();
  }

  /** Stops the heartbeat and closes both connections (this replica's calls expire with its lease). */
  async close(): Promise<void> {
    this.#heartbeat.stop();
    this.#outage.shares.stop();
    this.#waiters.stop(); // and its look at the fleet when another replica's lease ends
    await this.#releases.flush(); // the last releases reach Redis before the connection closes
    this.#subscriber.disconnect();
    await this.#client.quit().catch(() => this.#client.disconnect());
  }

  /** Reads answers from Redis (bucket levels, pauses) on `clock`, the scheduler's timeline. */
  useClock(clock: Clock): void {
    this.#clock = clock;
  }

  status(): FleetStatus {
    return { replica: this.replica, mode: this.#outage.mode, errors: this.#outage.errors };
  }

  concurrency(key: string, limit: number, reserve = 0, name = key): ConcurrencyBudget {
    return this.#mirror.track(key, this.#local.concurrency(key, limit, reserve, name));
  }

  admission(key: string, maxInflight: number, maxQueued: number, name = key): AdmissionBudget {
    return this.#mirror.track(key, this.#local.admission(key, maxInflight, maxQueued, name));
  }

  arrival(key: string, limit: number, maxRank?: Rank, name = key): ArrivalBudget {
    if (limit >= Number.MAX_SAFE_INTEGER) return this.#local.arrival(key, limit, maxRank, name); // nothing to count
    return this.#keys.budget(key, limit, maxRank, name); // in flight + queued, fleet-wide (`redis/keys.ts`)
  }

  arrive(key: ArrivalBudget): Promise<void> | undefined {
    return this.#keys.arrive(key); // a bounded key's slot, taken in Redis for an arrival
  }

  rate(key: string, unit: RateUnit, perMinute: number, nowMs: number, name = key): RateBudget {
    const bucket = this.#local.rate(key, unit, perMinute, nowMs, name);
    this.#rates.trackRate(key, bucket);
    return bucket;
  }

  /**
   * An account whose calls in flight, buckets and quota pause the fleet shares; its adaptive cap
   * and pause travel to the other replicas as a pod's state does (`onShare` → `#accountState`).
   */
  account(key: string, settings: AccountSettings, nowMs: number, name = key): AccountBudget {
    const account = this.#local.account(key, settings, nowMs, name);
    if (this.#rates.trackAccount(key, account)) {
      this.#mirror.track(key, account);
      account.onShare((state) => this.#accounts.share(key, state));
    }
    return account;
  }

  take(path: Path, rank: Rank, cost: number, nowMs: number, from = 0): boolean {
    // Local only: `confirm` asks the fleet (and, while Redis is down under `closed`, refuses).
    if (!this.#local.take(path, rank, cost, nowMs, from)) return false;
    this.#rates.took(path, cost, from);
    return true;
  }

  commit(path: Path, cost: number, nowMs: number, from = 0, rank?: Rank): void {
    this.#local.commit(path, cost, nowMs, from, rank); // local only, like take: confirm asks the fleet
    this.#rates.took(path, cost, from);
  }

  /**
   * Confirms with the fleet what `take` took locally from `path` (from `from` on). Resolves false
   * when another replica holds the room (the caller rolls back); rejects with
   * `StoreUnavailableError` while Redis is down and the policy is `closed` (`redis/confirm.ts`).
   */
  confirm(path: Path, rank: Rank, from = 0, cost = 0, effective: number = rank): Promise<boolean> {
    return this.#confirm.confirm(path, rank, from, cost, effective);
  }

  /** Gives back locally what a refused `confirm` took (nothing reached the fleet). */
  rollback(path: Path, cost: number, nowMs: number, from = 0): void {
    this.#local.give(path, cost, nowMs, from);
  }

  give(path: Path, cost: number, nowMs: number, from = 0): void {
    this.#local.give(path, cost, nowMs, from);
    this.#keys.touch(); // a keyed call may have ended
    const keys = this.#mirror.fleetKeys(path, from);
    if (keys.length === 0) return;
    this.#mirror.confirmed(keys, -1);
    if (this.#outage.mode === "connected") this.#releases.add(keys); // else the rewrite after the outage has it
  }

  /**
   * Settles a call's reservation: on this process's buckets at once, then on the fleet's copies in
   * one script (fire-and-forget: a settlement that cannot reach Redis is applied when it answers).
   */
  reconcile(
    path: Path,
    reserved: number,
    used: number | null | undefined,
    nowMs: number,
    grantedAtMs: number,
  ): void {
    // undefined: the estimate stays charged
    const s = used === undefined ? null : this.#rates.settle(path, reserved, used, nowMs, grantedAtMs);
    if (s !== null) this.#rates.send(s, this.#link);
  }

  *budgets(): Iterable<Budget | ArrivalBudget> {
    yield* this.#local.budgets();
    yield* this.#keys.all();
  }

  /** Renews the lease and re-reads the fleet; writes back what it holds when Redis forgot it (`redis/heartbeat.ts`). */
  heartbeat(): Promise<void> {
    return this.#heartbeat.beat(true);
  }

  /** Tells the other replicas a pod's new adaptive state (one refusal narrows it fleet-wide), kept for later ones. */
  sharePod(id: string, state: SharedPodState): void {
    this.#pods.share(id, state);
  }

  /** The pods this replica serves: their kept state is read when first met (`onPodState`). */
  watchPods(source: () => Iterable<string>): void {
    this.#pods.watch(source);
    if (this.#heartbeat.started) void this.#pods.load(); // started: now; else at start's heartbeat
  }

  /** Where this replica's waiting calls are counted, for the advertisement (priority across replicas). */
  watchWaiters(source: WaitingSource): void {
    this.#waiters.watch(source);
  }

  /** This replica's waiters changed: the advertisement follows, once per event-loop turn. */
  waitersChanged(): void {
    this.#waiters.changed();
    this.#keys.touch(); // a keyed waiter may have left
  }
}
