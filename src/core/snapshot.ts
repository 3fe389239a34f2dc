/**
 * The snapshot (DESIGN §4): plain data, cheap enough to poll every tick, the same shape for
 * `gov.snapshot()`, `/api/telemetry/lanes` and `sluice status`. Field names are snake_case
 * because this is a wire format read by dashboards and other languages.
 */
import type { AccountBudget } from "./account.js";
import type { AdmissionBudget } from "./admission.js";
import type { ArrivalBudget, ConcurrencyBudget } from "./budget.js";
import { type FlowShareSnapshot, laneFlows } from "./flow-shares.js";
import { type Lane, SATURATED_AFTER_MS } from "./lane.js";
import type { Pod } from "./pod.js";
import { RateBudget } from "./rate-budget.js";
import { type WaitState, waitState } from "./wait-state.js";

export interface LaneSnapshot {
  lane: string;
  limit: number;
  reserve: number;
  /** The lane's in-flight capacity now (its limit, or the sum of its pods' widths if smaller). */
  width: number;
  queue_limit: number;
  inflight: number;
  /** With a fleet store, when other replicas hold calls too: in flight across the fleet (`inflight` is this replica's share). */
  fleet_inflight?: number;
  queued: number;
  queued_by_priority: { interactive: number; default: number; bulk: number };
  oldest_wait_s: number;
  wait_p50_s_5m: number;
  wait_p90_s_5m: number;
  queue_timeouts_5m: number;
  /** `queued > 0` held continuously for ≥ 60 s. */
  saturated: boolean;
  /**
   * Why its callers wait (seed 002, `wait-state.ts`): `local_queue` (every slot in use, callers
   * queue at the lane's limit), `gateway_degraded` (a pod tripped, paused or narrowed: the
   * servers took capacity away), or `ok`.
   */
  state: WaitState;
  /** Seconds until the first pod's quota pause ends while every pod is paused, or the lane's account's pause (calls are refused `quota_paused`); 0 otherwise. */
  paused_s: number;
  /** The lane's own token bucket (`tpm`), when it has one. */
  tokens?: BucketSnapshot;
  /** The lane's own request bucket (`rpm`), when it has one. */
  requests?: BucketSnapshot;
  /**
   * Each key's (tenant's) part of the lane, while a configured key's call waits or runs on it
   * (flow-shares.ts): its in flight and queued, its configured share and the part it holds.
   */
  flows?: FlowShareSnapshot[];
}

/** A lane's numbers as a refusal carries them (`Governor.laneStatus`): a few fields, read per refusal. */
export interface LaneStatus {
  inflight: number;
  queued: number;
  queueLimit: number;
  width: number;
  /** Why its callers wait; only when asked for (it walks the lane's pods). */
  state: WaitState | undefined;
}

/** A token or request bucket (`tpm` / `rpm`): its rate and level now, and what was used in the last minute. */
export interface BucketSnapshot {
  per_minute: number;
  /** What the bucket holds now (whole units; negative while in debt). */
  available: number;
  /** Charged in the last minute, net of refunds. */
  used_1m: number;
  /** What only interactive calls may take: other classes leave at least this much in the bucket. */
  reserve: number;
}

/** A provider account (seed 004: throttling at the account, concurrency in aggregate, and their ratio). */
export interface AccountSnapshot {
  account: string;
  /** Its lanes (models). */
  lanes: string[];
  /** Calls in flight across its lanes (this process). */
  inflight: number;
  /** With a fleet store, when other replicas hold calls: the account's calls in flight fleet-wide. */
  fleet_inflight?: number;
  /** The configured `max_inflight`; null when it has none. */
  max_inflight: number | null;
  /** The adaptive cap now (cut on throttling, grown on success); null without `max_inflight`. */
  adaptive_cap: number | null;
  tokens: BucketSnapshot | null;
  requests: BucketSnapshot | null;
  /** Answers that said slow down (429, 503, 529) in the last minute. */
  throttled_1m: number;
  /** `throttled_1m` per call in flight (in flight counted as at least 1). */
  throttled_per_inflight: number;
  /** Seconds left of a provider quota pause of the whole account; 0 when none. */
  quota_paused_s: number;
}

export interface PodSnapshot {
  id: string;
  /** The first lane that lists this pod. */
  lane: string;
  /** Every lane that lists it: one URL is one pod, shared by its lanes. */
  lanes: string[];
  width: number;
  ceiling: number;
  floor: number;
  inflight: number;
  /** With a fleet store, when other replicas have calls on it too: in flight across the fleet. */
  fleet_inflight?: number;
  /**
   * The pod's own running count from its `metrics_url` (vLLM's `num_requests_running`), while
   * the last report is fresh (three poll intervals). Calls it shows beyond the fleet's count hold
   * their slots until it shows them ending (docs/fleet.md).
   */
  reported_running?: number;
  breaker: "closed" | "open" | "half_open";
  /** Seconds until an open breaker allows its probe; 0 otherwise. */
  reopens_in_s: number;
  trips: number;
  /** Seconds before the pod takes calls again: a quota pause, or a floor-held pod's short rest after a refusal; 0 when it may. */
  paused_s: number;
  /** Seconds left of a provider quota pause alone (a 429 with a reset), capped at the lane's max quota pause. */
  quota_paused_s: number;
}

export interface GroupSnapshot {
  group: string;
  limit: number;
  inflight: number;
  /** With a fleet store, when other replicas hold calls in the group too: in flight across the fleet (`inflight` is this replica's share). */
  fleet_inflight?: number;
}

export interface KeySnapshot {
  key: string;
  max_inflight: number;
  inflight: number;
  queued: number;
  /** The tenant whose budget the key shares; absent = none. */
  tenant?: string;
  /**
   * The key's own token and request budgets (`tpm`, `rpm`): used in the last minute against the
   * rate; both absent when the key has neither, null for the one it lacks.
   */
  tokens?: BucketSnapshot | null;
  requests?: BucketSnapshot | null;
}

/** A tenant (keys sharing one budget): its keys' calls summed, and its buckets. */
export interface TenantSnapshot {
  tenant: string;
  keys: string[];
  inflight: number;
  queued: number;
  tokens: BucketSnapshot | null;
  requests: BucketSnapshot | null;
}

/** The admission bound across every lane (when one is set). */
export interface AdmissionSnapshot {
  /** Calls in flight across every lane, and their limit. */
  inflight: number;
  /** With a fleet store, when other replicas hold calls too: in flight across the fleet (the limit is shared; `admitted` is not). */
  fleet_inflight?: number;
  max_inflight: number;
  /** Requests admitted and not yet ended (sending their body, waiting, or in flight). */
  admitted: number;
  /** How many may be admitted beyond `max_inflight`. */
  max_queued: number;
}

export interface Snapshot {
  enabled: boolean;
  generated_at: string;
  replica: string;
  lanes: LaneSnapshot[];
  pods: PodSnapshot[];
  groups: GroupSnapshot[];
  keys: KeySnapshot[];
  /** Tenants (groups of keys sharing a budget); absent when none is configured. */
  tenants?: TenantSnapshot[];
  accounts: AccountSnapshot[];
  admission?: AdmissionSnapshot;
  /** Where budgets are counted: `memory`, or a fleet store and its state (`connected`, or the outage policy in force). */
  store?: StoreSnapshot;
}

/** The store's state: a fleet store says whether Redis answers. */
export interface StoreSnapshot {
  description: string;
  mode: "memory" | "connected" | "local" | "open" | "closed";
  replica?: string;
}

const seconds = (ms: number): number => Math.round(ms) / 1000;

/** `keys`: the configured keys, whose flows the lane's `flows` lists (none given: no `flows`). */
export function laneSnapshot(lane: Lane, nowMs: number, keys: Iterable<ArrivalBudget> = []): LaneSnapshot {
  const q = lane.queue;
  const oldest = q.earliestEnqueued;
  const flows = laneFlows(lane, keys);
  return {
    lane: lane.name,
    limit: lane.limit,
    reserve: lane.settings.reserve,
    width: lane.width,
    queue_limit: lane.settings.queueLimit,
    inflight: lane.inflight,
    // With a fleet store: every replica's calls (this one's share is `inflight`).
    ...(lane.budget.others > 0 ? { fleet_inflight: lane.inflight + lane.budget.others } : {}),
    queued: q.size,
    queued_by_priority: { interactive: q.count(0), default: q.count(1), bulk: q.count(2) },
    oldest_wait_s: oldest === null ? 0 : seconds(nowMs - oldest.enqueuedAt),
    wait_p50_s_5m: seconds(lane.waits.quantile(0.5, nowMs)),
    wait_p90_s_5m: seconds(lane.waits.quantile(0.9, nowMs)),
    queue_timeouts_5m: lane.timeouts.events(nowMs),
    saturated: lane.queuedSince !== undefined && nowMs - lane.queuedSince >= SATURATED_AFTER_MS,
    state: waitState(lane, nowMs),
    paused_s: seconds(lane.pausedFor(nowMs) ?? 0),
    ...laneBuckets(lane, nowMs),
    ...(flows === undefined ? {} : { flows }),
  };
}

/** The lane's own buckets (its account's are in the account's entry). */
function laneBuckets(lane: Lane, nowMs: number): Pick<LaneSnapshot, "tokens" | "requests"> {
  const out: Pick<LaneSnapshot, "tokens" | "requests"> = {};
  for (const b of lane.metered) if (b instanceof RateBudget) out[b.unit] = bucketSnapshot(b, nowMs);
  return out;
}

export function bucketSnapshot(b: RateBudget, nowMs: number): BucketSnapshot {
  return {
    per_minute: b.perMinute,
    available: Math.floor(b.levelAt(nowMs)),
    used_1m: Math.round(b.used.total(nowMs)),
    reserve: b.reserve,
  };
}

export function accountSnapshot(a: AccountBudget, lanes: string[], nowMs: number): AccountSnapshot {
  const throttled = a.throttled.total(nowMs);
  const bounded = a.settings.maxInflight !== undefined;
  return {
    account: a.name,
    lanes,
    inflight: a.inflight,
    ...(a.others > 0 ? { fleet_inflight: a.inflight + a.others } : {}),
    max_inflight: a.settings.maxInflight ?? null,
    adaptive_cap: bounded ? a.width.width : null,
    tokens: a.tokens === null ? null : bucketSnapshot(a.tokens, nowMs),
    requests: a.requests === null ? null : bucketSnapshot(a.requests, nowMs),
    throttled_1m: throttled,
    throttled_per_inflight: Math.round((throttled / Math.max(1, a.inflight)) * 1000) / 1000,
    quota_paused_s: seconds(Math.max(0, a.quotaUntil - nowMs)),
  };
}

export function podSnapshot(pod: Pod, lanes: string[], nowMs: number): PodSnapshot {
  const state = pod.breaker.state;
  const reopen = pod.breaker.reopensAt();
  return {
    id: pod.id,
    lane: lanes[0] ?? "",
    lanes,
    width: pod.width.width,
    ceiling: pod.ceiling,
    floor: pod.width.toJSON().floor,
    inflight: pod.inflight,
    ...(pod.others > 0 ? { fleet_inflight: pod.inflight + pod.others } : {}),
    ...(nowMs < pod.reportedUntil ? { reported_running: pod.reportedRunning } : {}),
    breaker: state.kind,
    reopens_in_s: reopen === undefined ? 0 : seconds(Math.max(0, reopen - nowMs)),
    trips: state.kind === "closed" ? 0 : state.trips,
    paused_s: seconds(Math.max(0, pod.pausedUntil - nowMs)),
    quota_paused_s: seconds(Math.max(0, pod.quotaUntil - nowMs)),
  };
}

export function groupSnapshot(name: string, b: ConcurrencyBudget): GroupSnapshot {
  return {
    group: name,
    limit: b.limit,
    inflight: b.inflight,
    ...(b.others > 0 ? { fleet_inflight: b.inflight + b.others } : {}),
  };
}

/**
 * The admission bound's in-flight part as a group entry (the name the gateway has always shown
 * it under), with the fleet's count when other replicas hold calls too.
 */
export function admissionGroupSnapshot(a: AdmissionBudget): GroupSnapshot {
  return {
    group: a.name,
    limit: a.maxInflight,
    inflight: a.inflight,
    ...(a.others > 0 ? { fleet_inflight: a.inflight + a.others } : {}),
  };
}

export function keySnapshot(name: string, k: ArrivalBudget, nowMs: number, tenant?: string): KeySnapshot {
  const own = k.meter?.parts.find((p) => p.scope === "key")?.budget ?? null;
  return {
    key: name,
    max_inflight: k.limit,
    inflight: k.inflight,
    queued: k.queued,
    // Only what is configured: a key without a tenant or budgets shows what it always has.
    ...(tenant === undefined ? {} : { tenant }),
    ...(own === null
      ? {}
      : {
          tokens: own.tokens ? bucketSnapshot(own.tokens, nowMs) : null,
          requests: own.requests ? bucketSnapshot(own.requests, nowMs) : null,
        }),
  };
}

/** A tenant from its keys' snapshots and its budget (null when it has no `tpm` / `rpm`). */
export function tenantSnapshot(
  name: string,
  keys: readonly KeySnapshot[],
  budget: AccountBudget | null,
  nowMs: number,
): TenantSnapshot {
  const members = keys.filter((k) => k.tenant === name);
  return {
    tenant: name,
    keys: members.map((k) => k.key),
    inflight: members.reduce((n, k) => n + k.inflight, 0),
    queued: members.reduce((n, k) => n + k.queued, 0),
    tokens: budget?.tokens ? bucketSnapshot(budget.tokens, nowMs) : null,
    requests: budget?.requests ? bucketSnapshot(budget.requests, nowMs) : null,
  };
}

export function admissionSnapshot(a: AdmissionBudget): AdmissionSnapshot {
  return {
    inflight: a.inflight,
    ...(a.others > 0 ? { fleet_inflight: a.inflight + a.others } : {}),
    max_inflight: a.maxInflight,
    admitted: a.entered,
    max_queued: a.maxQueued,
  };
}

/**
 * The snapshot without its fleet counts: while the fleet store cannot reach Redis they are not
 * counts (under `local` a budget's `others` is the share set aside for the other replicas), so
 * they are left out rather than shown as if measured. `store.mode` says why.
 */
export function withoutFleetCounts(s: Snapshot): Snapshot {
  const strip = <T extends { fleet_inflight?: number }>(x: T): T => {
    const { fleet_inflight: _, ...rest } = x;
    return rest as T;
  };
  return {
    ...s,
    lanes: s.lanes.map(strip),
    pods: s.pods.map(strip),
    groups: s.groups.map(strip),
    accounts: s.accounts.map(strip),
    ...(s.admission === undefined ? {} : { admission: strip(s.admission) }),
  };
}
