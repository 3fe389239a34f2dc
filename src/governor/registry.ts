/**
 * What a Governor governs, built from its resolved options: lanes (one per configured lane, or
 * created from the defaults on first use), the pods serving them, the shared groups, the keys and
 * the admission bound — every budget made by the store, so a store that shares budgets across
 * processes finds them by the same keys (`lane:NAME`, `group:NAME`, `key:NAME`, `admission`).
 *
 * `apply` builds it and, on a reload, changes it in place: limits change on the live budgets,
 * so calls in flight keep their slots and are released into the new limits, and waiters keep
 * their place. Nothing changes unless the whole new configuration is consistent.
 */
import type { AccountBudget } from "../core/account.js";
import type { AdmissionBudget } from "../core/admission.js";
import type { BreakerTransition } from "../core/breaker.js";
import type { ArrivalBudget, Budget, ConcurrencyBudget } from "../core/budget.js";
import { DEFAULT_SHARE_ABOVE, shareTable } from "../core/class-shares.js";
import { ConfigError } from "../core/errors.js";
import type { KeyBudget } from "../core/key-meter.js";
import { Lane } from "../core/lane.js";
import type { Lease, Ticket, TicketOwner } from "../core/lease.js";
import type { PodOptions, ResolvedLane, ResolvedOptions } from "../core/options.js";
import { Pod } from "../core/pod.js";
import { type Rank, rankOf } from "../core/priority.js";
import {
  accountSnapshot,
  admissionGroupSnapshot,
  admissionSnapshot,
  groupSnapshot,
  keySnapshot,
  laneSnapshot,
  podSnapshot,
  type Snapshot,
  tenantSnapshot,
  withoutFleetCounts,
} from "../core/snapshot.js";
import { isFleetStore, type Store } from "../core/store.js";
import { syncFlows, type TenantFlows } from "./flows.js";
import { syncKeyBudgets, tenantBudgetKey, tenantOf } from "./key-budgets.js";
import { passThroughLease } from "./pass-through.js";

/** Told when a pod's breaker changes: the lane that created the pod, the pod, the transition. */
export type BreakerListener = (lane: string, pod: Pod, transition: BreakerTransition) => void;

/** A pod as the configuration lists it, with where it was first listed (for conflict errors). */
interface PodSpec {
  readonly lane: string;
  readonly options: PodOptions;
  readonly resolved: ResolvedLane;
  readonly path: string;
}

export class Registry {
  readonly lanes = new Map<string, Lane<Ticket>>();
  /** Lanes with `limit: 0`: one shared no-op lease each. */
  readonly passThrough = new Map<string, Lease>();
  readonly groups = new Map<string, ConcurrencyBudget>();
  readonly keys = new Map<string, ArrivalBudget>();
  /** Keys' and tenants' token and request budgets by store key (`key-budgets.ts`), on their calls' paths. */
  readonly keyBudgets = new Map<string, KeyBudget>();
  /** Tenants' fair-queuing flows by name (`flows.ts`), kept across reloads. */
  readonly #tenantFlows: TenantFlows = new Map();
  /** The next lane's `slot` (where keys count their calls on it). */
  #slots = 0;
  /** Provider accounts by name: each one budget on the path of every lane of the account. */
  readonly accounts = new Map<string, AccountBudget>();
  /** One pod per URL, whichever lanes list it. */
  readonly pods = new Map<string, Pod>();
  /** The admission bound across every lane, when configured: on every lane's path. */
  admission: AdmissionBudget | null = null;
  #options!: ResolvedOptions;
  /** Lanes created on first use from `defaults` (a reload applies the new defaults to them). */
  readonly #fromDefaults = new Set<string>();
  /** `lane()`'s last answer, forgotten whenever `apply` changes which lanes exist. */
  #lastName: string | undefined = undefined;
  #lastLane: Lane<Ticket> | null = null;

  constructor(
    options: ResolvedOptions,
    readonly store: Store,
    readonly random: () => number,
    readonly owner: TicketOwner,
    readonly onBreaker: BreakerListener,
    /** The clock, for buckets made or changed (a bucket starts full at the time it is made). */
    readonly now: () => number,
  ) {
    this.apply(options);
  }

  /**
   * Builds everything from `options`, or changes it in place on a reload. A lane or pod no longer
   * listed stops taking new calls (its waiters and calls in flight finish normally); a budget added
   * on a reload counts the calls granted after it.
   *
   * @throws ConfigError before changing anything when a pod listed by several lanes disagrees.
   */
  apply(options: ResolvedOptions): void {
    const specs = podSpecs(options);
    this.#options = options;
    this.#lastName = undefined;
    this.#lastLane = null;
    const store = this.store;
    const a = options.admission;
    if (a === undefined) this.admission = null;
    else {
      this.admission = store.admission("admission", a.maxInflight, a.maxQueued, "gateway");
      this.admission.maxInflight = a.maxInflight;
      this.admission.maxQueued = a.maxQueued;
    }
    syncMap(this.groups, options.groups, (name, g) => {
      const budget = store.concurrency(`group:${name}`, g.limit, 0, name);
      budget.limit = g.limit;
      return budget;
    });
    syncMap(this.keys, options.keys, (name, k) => {
      const budget = store.arrival(`key:${name}`, k.maxInflight, rankOf(k.maxPriority)!, name);
      budget.limit = k.maxInflight;
      budget.maxRank = rankOf(k.maxPriority)!;
      return budget;
    });
    syncKeyBudgets(store, options, this.keys, this.keyBudgets, this.now());
    syncFlows(options, this.keys, this.#tenantFlows);
    syncMap(this.accounts, options.accounts ?? {}, (name, settings) => {
      this.#refuseFleetShares(settings, `accounts.${name}`);
      const account = store.account(`account:${name}`, settings, this.now(), name);
      account.reconfigure(settings, this.now());
      // Its shares lend what no lane of the account has waiters for.
      const waiting = (rank: Rank) => {
        for (const lane of this.lanes.values())
          if (lane.account === account && lane.queue.count(rank) > 0) return true;
        return false;
      };
      if (account.tokens !== null) account.tokens.waiting = waiting;
      if (account.requests !== null) account.requests.waiting = waiting;
      return account;
    });
    syncMap(this.pods, Object.fromEntries(specs), (id, spec) => this.#pod(id, spec));
    const configured = new Set(Object.keys(options.lanes));
    for (const name of [...this.lanes.keys(), ...this.passThrough.keys()]) {
      if (configured.has(name)) continue;
      this.lanes.delete(name);
      this.passThrough.delete(name);
      // A lane made from the defaults is made again from the new ones on its next call.
      this.#fromDefaults.delete(name);
    }
    for (const [name, lane] of Object.entries(options.lanes)) this.#upsert(name, lane);
  }

  /** The lane named `name`, created from the defaults on first use; null for a pass-through lane. */
  lane(name: string): Lane<Ticket> | null {
    // The last lane asked for, without a Map lookup: most callers use one lane over and over.
    if (name === this.#lastName) return this.#lastLane;
    let lane: Lane<Ticket> | null | undefined = this.lanes.get(name);
    if (lane === undefined && !this.passThrough.has(name)) {
      this.#fromDefaults.add(name);
      lane = this.#upsert(name, this.#options.defaults);
    }
    this.#lastName = name;
    this.#lastLane = lane ?? null;
    return this.#lastLane;
  }

  /** The key's budget, or null for no key or one not configured (untracked). */
  key(name: string | undefined): ArrivalBudget | null {
    return name === undefined ? null : (this.keys.get(name) ?? null);
  }

  /** Everything as plain data (the snapshot of `/api/telemetry/lanes` and `sluice status`). */
  snapshot(now: number, replica: string): Snapshot {
    const lanes = [...this.lanes.values()];
    const admission = this.admission;
    const store = storeSnapshot(this.store);
    const snapshot: Snapshot = {
      enabled: lanes.length > 0,
      generated_at: new Date().toISOString(),
      replica,
      lanes: lanes.map((l) => laneSnapshot(l, now, this.keys.values())),
      pods: [...this.pods.values()].map((p) => podSnapshot(p, this.lanesOf(p), now)),
      groups: [
        // The admission bound's in-flight part, under the name the gateway has always shown.
        ...(admission === null ? [] : [admissionGroupSnapshot(admission)]),
        ...[...this.groups].map(([name, g]) => groupSnapshot(name, g)),
      ],
      ...this.#keysSnapshot(now),
      accounts: [...this.accounts.values()].map((a) => accountSnapshot(a, this.#lanesOfAccount(a), now)),
      ...(admission === null ? {} : { admission: admissionSnapshot(admission) }),
      store,
    };
    const counted = store.mode === "memory" || store.mode === "connected";
    return counted ? snapshot : withoutFleetCounts(snapshot);
  }

  /** Keys with their own budgets, and tenants (only when configured) with their keys summed. */
  #keysSnapshot(now: number): Pick<Snapshot, "keys" | "tenants"> {
    const tenantOfKey = tenantOf(this.#options);
    const keys = [...this.keys].map(([name, k]) => keySnapshot(name, k, now, tenantOfKey.get(name)));
    const names = Object.keys(this.#options.tenants ?? {});
    if (names.length === 0) return { keys };
    const budget = (name: string) => this.keyBudgets.get(tenantBudgetKey(name))?.budget ?? null;
    return { keys, tenants: names.map((name) => tenantSnapshot(name, keys, budget(name), now)) };
  }

  /** The lanes of `account`, in the order they were created. */
  #lanesOfAccount(account: AccountBudget): string[] {
    const names: string[] = [];
    for (const lane of this.lanes.values()) if (lane.account === account) names.push(lane.name);
    return names;
  }

  /** The lanes that list `pod`, in the order they were created. */
  lanesOf(pod: Pod): string[] {
    const names: string[] = [];
    for (const lane of this.lanes.values()) if (lane.pods?.includes(pod)) names.push(lane.name);
    return names;
  }

  /** Creates lane `name` or applies new settings to it; null (and a shared no-op lease) for limit 0. */
  #upsert(name: string, resolved: ResolvedLane): Lane<Ticket> | null {
    const existing = this.lanes.get(name);
    if (resolved.limit === 0) {
      this.lanes.delete(name); // its waiters and calls in flight finish on the old object
      if (!this.passThrough.has(name)) this.passThrough.set(name, passThroughLease(name));
      return null;
    }
    this.passThrough.delete(name);
    const account = resolved.account === undefined ? null : (this.accounts.get(resolved.account) ?? null);
    // Metered budgets sit in the lane's part of the path: a re-dispatch keeps them (no second charge).
    const shared: Budget[] = [
      ...(this.admission === null ? [] : [this.admission]),
      ...resolved.groups.map((g) => this.groups.get(g)!),
      ...(account === null ? [] : [account]),
      ...this.#rates(name, resolved),
    ];
    const pods = resolved.pods === undefined ? null : resolved.pods.map((p) => this.pods.get(p.id)!);
    if (existing !== undefined) {
      existing.reconfigure(resolved, shared, pods);
      existing.account = account;
      return existing;
    }
    const budget = this.store.concurrency(`lane:${name}`, resolved.limit, resolved.reserve, name);
    const lane = new Lane<Ticket>(name, resolved, budget, shared, pods);
    lane.slot = this.#slots++; // never reused: calls of a removed lane may still end
    lane.reconfigure(resolved, shared, pods); // a budget found in the store takes the new limits too
    lane.owner = this.owner;
    lane.account = account;
    this.lanes.set(name, lane);
    return lane;
  }

  /** The lane's own token and request buckets (`tpm`, `rpm`), made by the store, changed in place on a reload. */
  #rates(name: string, resolved: ResolvedLane): Budget[] {
    this.#refuseFleetShares(resolved, `lanes.${name}`);
    const out: Budget[] = [];
    for (const [unit, perMinute, reserve] of [
      ["tokens", resolved.tpm, resolved.tpmReserve],
      ["requests", resolved.rpm, resolved.rpmReserve],
    ] as const) {
      if (perMinute === undefined) continue;
      const key = `${unit === "tokens" ? "tpm" : "rpm"}:lane:${name}`;
      const bucket = this.store.rate(key, unit, perMinute, this.now(), name);
      bucket.reconfigure(perMinute, this.now(), reserve ?? 0);
      const shares = unit === "tokens" ? resolved.tpmShares : resolved.rpmShares;
      bucket.setShares(
        shares === undefined ? null : shareTable(shares),
        resolved.shareAbove ?? DEFAULT_SHARE_ABOVE,
        this.now(),
      );
      // Its shares lend what no class waits for in the lane's queue.
      bucket.waiting = (rank) => (this.lanes.get(name)?.queue.count(rank) ?? 0) > 0;
      out.push(bucket);
    }
    return out;
  }

  /**
   * Class shares of a bucket need each class's credit in the fleet's copy too, which is not built:
   * a fleet store refuses them rather than keep them in one process only.
   */
  #refuseFleetShares(o: { tpmShares?: unknown; rpmShares?: unknown }, path: string): void {
    if (!isFleetStore(this.store)) return;
    for (const key of ["tpmShares", "rpmShares"] as const)
      if (o[key] !== undefined)
        throw new ConfigError(
          `${path}.${key}`,
          "no class shares with a fleet store",
          o[key],
          "shares of a bucket by class are built for the memory store only",
        );
  }

  /** The pod at `id` with the settings of the lane that first lists it, created or changed in place. */
  #pod(id: string, spec: PodSpec): Pod {
    const { options: p, resolved } = spec;
    const group = p.gpuGroup === undefined ? null : this.groups.get(p.gpuGroup)!;
    const existing = this.pods.get(id);
    if (existing !== undefined) {
      existing.reconfigure(p.maxInflight, group, resolved.adaptive, resolved.breaker);
      existing.maxQuotaPauseMs = resolved.maxQuotaPauseMs;
      return existing;
    }
    const pod = new Pod(
      id,
      p.maxInflight,
      group,
      resolved.adaptive,
      resolved.breaker,
      this.random,
      (changed, tr) => this.onBreaker(spec.lane, changed, tr),
    );
    pod.maxQuotaPauseMs = resolved.maxQuotaPauseMs;
    return pod;
  }
}

/**
 * Every pod the lanes of `options` list, by URL. One URL is one server: a pod listed by several
 * lanes is one budget (width, breaker, in flight), so its settings must agree wherever it is listed.
 */
function podSpecs(options: ResolvedOptions): Map<string, PodSpec> {
  const specs = new Map<string, PodSpec>();
  for (const [lane, resolved] of Object.entries(options.lanes)) {
    if (resolved.limit === 0) continue;
    (resolved.pods ?? []).forEach((p, i) => {
      const path = `lanes.${lane}.pods[${i}]`;
      const first = specs.get(p.id);
      if (first === undefined) {
        specs.set(p.id, { lane, options: p, resolved, path });
        return;
      }
      const sameAs = `as in ${first.path} (one URL is one pod, shared by its lanes)`;
      if (first.options.maxInflight !== p.maxInflight)
        throw new ConfigError(
          `${path}.maxInflight`,
          `${first.options.maxInflight}, ${sameAs}`,
          p.maxInflight,
        );
      if (first.options.gpuGroup !== p.gpuGroup)
        throw new ConfigError(`${path}.gpuGroup`, `the same GPU group ${sameAs}`, p.gpuGroup);
      if ((first.resolved.adaptive === false) !== (resolved.adaptive === false))
        throw new ConfigError(
          `lanes.${lane}.adaptive`,
          `the same adaptive setting ${sameAs}`,
          resolved.adaptive,
        );
    });
  }
  return specs;
}

function storeSnapshot(store: Store): NonNullable<Snapshot["store"]> {
  if (!isFleetStore(store)) return { description: store.description, mode: "memory" };
  const status = store.status();
  return { description: store.description, mode: status.mode, replica: status.replica };
}

/** Makes `map` hold exactly the names of `wanted`, each made (or changed in place) by `make`. */
function syncMap<V, S>(
  map: Map<string, V>,
  wanted: Readonly<Record<string, S>>,
  make: (name: string, spec: S) => V,
): void {
  for (const name of [...map.keys()]) if (!Object.hasOwn(wanted, name)) map.delete(name);
  for (const [name, spec] of Object.entries(wanted)) map.set(name, make(name, spec));
}
