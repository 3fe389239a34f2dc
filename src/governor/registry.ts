/**
 * What a Governor governs, built from its resolved options: lanes (one per configured lane, or
 * created from the defaults on first use), the pods serving them, the shared groups and the keys —
 * every budget made by the store, so a store that shares budgets across processes finds them by
 * the same keys (`lane:NAME`, `group:NAME`, `key:NAME`).
 */
import type { AdmissionBudget } from "../core/admission.js";
import type { BreakerTransition } from "../core/breaker.js";
import type { ArrivalBudget, ConcurrencyBudget } from "../core/budget.js";
import { ConfigError } from "../core/errors.js";
import { Lane } from "../core/lane.js";
import type { Lease, Ticket, TicketOwner } from "../core/lease.js";
import type { PodOptions, ResolvedLane, ResolvedOptions } from "../core/options.js";
import { Pod } from "../core/pod.js";
import { rankOf } from "../core/priority.js";
import {
  admissionSnapshot,
  groupSnapshot,
  keySnapshot,
  laneSnapshot,
  podSnapshot,
  type Snapshot,
} from "../core/snapshot.js";
import type { Store } from "../store/store.js";
import { passThroughLease } from "./pass-through.js";

/** Told when a pod's breaker changes: the lane that created the pod, the pod, the transition. */
export type BreakerListener = (lane: string, pod: Pod, transition: BreakerTransition) => void;

export class Registry {
  readonly lanes = new Map<string, Lane<Ticket>>();
  /** Lanes with `limit: 0`: one shared no-op lease each. */
  readonly passThrough = new Map<string, Lease>();
  readonly groups = new Map<string, ConcurrencyBudget>();
  readonly keys = new Map<string, ArrivalBudget>();
  /** One pod per URL, whichever lanes list it. */
  readonly pods = new Map<string, Pod>();
  /** The admission bound across every lane, when configured: on every lane's path. */
  readonly admission: AdmissionBudget | null;

  constructor(
    readonly options: ResolvedOptions,
    readonly store: Store,
    readonly random: () => number,
    readonly owner: TicketOwner,
    readonly onBreaker: BreakerListener,
  ) {
    const a = options.admission;
    this.admission =
      a === undefined ? null : store.admission("admission", a.maxInflight, a.maxQueued, "gateway");
    for (const [name, g] of Object.entries(options.groups))
      this.groups.set(name, store.concurrency(`group:${name}`, g.limit, 0, name));
    for (const [name, k] of Object.entries(options.keys))
      this.keys.set(name, store.arrival(`key:${name}`, k.maxInflight, rankOf(k.maxPriority)!, name));
    for (const [name, lane] of Object.entries(options.lanes)) this.#create(name, lane, `lanes.${name}`);
  }

  /** The lane named `name`, created from the defaults on first use; null for a pass-through lane. */
  lane(name: string): Lane<Ticket> | null {
    return (
      this.lanes.get(name) ??
      (this.passThrough.has(name) ? null : this.#create(name, this.options.defaults, `lanes.${name}`))
    );
  }

  /** The key's budget, or null for no key or one not configured (untracked). */
  key(name: string | undefined): ArrivalBudget | null {
    return name === undefined ? null : (this.keys.get(name) ?? null);
  }

  /** Everything as plain data (the snapshot of `/api/telemetry/lanes` and `sluice status`). */
  snapshot(now: number, replica: string): Snapshot {
    const lanes = [...this.lanes.values()];
    const admission = this.admission;
    return {
      enabled: lanes.length > 0,
      generated_at: new Date().toISOString(),
      replica,
      lanes: lanes.map((l) => laneSnapshot(l, now)),
      pods: [...this.pods.values()].map((p) => podSnapshot(p, this.lanesOf(p), now)),
      groups: [
        // The admission bound's in-flight part, under the name the gateway has always shown.
        ...(admission === null
          ? []
          : [{ group: admission.name, limit: admission.maxInflight, inflight: admission.inflight }]),
        ...[...this.groups].map(([name, g]) => groupSnapshot(name, g)),
      ],
      keys: [...this.keys].map(([name, k]) => keySnapshot(name, k)),
      accounts: [],
      ...(admission === null ? {} : { admission: admissionSnapshot(admission) }),
    };
  }

  /** The lanes that list `pod`, in the order they were created. */
  lanesOf(pod: Pod): string[] {
    const names: string[] = [];
    for (const lane of this.lanes.values()) if (lane.pods?.includes(pod)) names.push(lane.name);
    return names;
  }

  #create(name: string, resolved: ResolvedLane, path: string): Lane<Ticket> | null {
    if (resolved.limit === 0) {
      this.passThrough.set(name, passThroughLease(name));
      return null;
    }
    const pods =
      resolved.pods === undefined
        ? null
        : resolved.pods.map((p, i) => this.#pod(name, p, resolved, `${path}.pods[${i}]`));
    const lane = new Lane<Ticket>(
      name,
      resolved,
      this.store.concurrency(`lane:${name}`, resolved.limit, resolved.reserve, name),
      [
        ...(this.admission === null ? [] : [this.admission]),
        ...resolved.groups.map((g) => this.groups.get(g)!),
      ],
      pods,
    );
    lane.owner = this.owner;
    this.lanes.set(name, lane);
    return lane;
  }

  /**
   * The pod at `p.id`, created on first use. One URL is one server: a pod listed by several lanes
   * is one budget (width, breaker, in flight), so its settings must agree wherever it is listed.
   */
  #pod(lane: string, p: PodOptions, resolved: ResolvedLane, path: string): Pod {
    const existing = this.pods.get(p.id);
    const gpuGroup = p.gpuGroup === undefined ? null : this.groups.get(p.gpuGroup)!;
    if (existing !== undefined) {
      const sameAs = `as where ${p.id} is first listed (one URL is one pod, shared by its lanes)`;
      if (existing.ceiling !== p.maxInflight)
        throw new ConfigError(`${path}.maxInflight`, `${existing.ceiling}, ${sameAs}`, p.maxInflight);
      if (existing.group !== gpuGroup)
        throw new ConfigError(`${path}.gpuGroup`, `the same GPU group ${sameAs}`, p.gpuGroup);
      if (existing.adaptive !== (resolved.adaptive !== false))
        throw new ConfigError(
          `${path.replace(/\.pods\[\d+\]$/, "")}.adaptive`,
          `the same adaptive setting ${sameAs}`,
          resolved.adaptive,
        );
      return existing;
    }
    const pod = new Pod(
      p.id,
      p.maxInflight,
      gpuGroup,
      resolved.adaptive,
      resolved.breaker,
      this.random,
      (changed, tr) => this.onBreaker(lane, changed, tr),
    );
    pod.maxQuotaPauseMs = resolved.maxQuotaPauseMs;
    this.pods.set(p.id, pod);
    return pod;
  }
}
