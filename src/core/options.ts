/**
 * The Governor's options, validated once (STYLE G7) by {@link resolveGovernorOptions}: a bad value
 * throws `ConfigError` naming the option's path, what was expected and what arrived, so the core
 * never sees an invalid value, and every default comes from the one table in `defaults.ts`. Options
 * built from the gateway config arrive already resolved ({@link markResolved}) and are not checked
 * again. Units are in the names (STYLE G8).
 */

import type { BreakerOptions, BreakerSettings } from "./breaker.js";
import { resolveBreaker } from "./breaker-options.js";
import type { Clock } from "./clock.js";
import { DEFAULTS, MAX_TIMER_MS } from "./defaults.js";
import {
  type KeyOptions,
  type ResolvedKey,
  type ResolvedTenant,
  resolveKeys,
  resolveTenants,
  type TenantOptions,
} from "./key-options.js";
import {
  type AccountOptions,
  accountShares,
  LANE_RATE_KEYS,
  type LaneRateOptions,
  type ResolvedAccount,
  type ResolvedLaneRates,
  reserveShare,
  resolveAccounts,
  resolveLaneRates,
} from "./rate-options.js";
import type { Store } from "./store.js";
import { check, isInt, isNum, knownKeys } from "./validate.js";

export type { KeyOptions, ResolvedKey, ResolvedTenant, TenantOptions } from "./key-options.js";
export type { AccountOptions, ResolvedAccount } from "./rate-options.js";

/** One endpoint serving a lane. */
export interface PodOptions {
  /** Where to send calls, usually the base URL; also the pod's name in snapshots. */
  id: string;
  /** The operator's ceiling for this pod (its `--max-num-seqs`); adaptive width starts here. */
  maxInflight: number;
  /** GPU group this pod's calls also count against (a key of `groups`). */
  gpuGroup?: string;
}

/** Options of one lane (DESIGN §1, §1.1); its `tpm`, `rpm`, their reserves and `account` are in {@link LaneRateOptions}. */
export interface LaneOptions extends LaneRateOptions {
  /**
   * Calls in flight at once; 0 = pass-through (no waiting, no counting). **Default:** the sum of
   * its pods' `maxInflight`, else 0 (a lane created on first use takes `defaults` instead).
   */
  limit?: number;
  /** Slots only interactive callers may take; clamped to `limit − 1`. **Default:** 1. */
  reserve?: number;
  /** Waiters allowed in the queue; past it, arrivals shed lower classes or are refused. **Default:** 4 × `limit`. */
  queueLimit?: number;
  /** Longest a call waits for a slot before `QueueTimeoutError`. **Default:** 30 000 ms. */
  queueTimeoutMs?: number;
  /** A waiter's class rises one step per this long waited. **Default:** 60 000 ms. */
  agingMs?: number;
  /** Shared budget(s) (keys of `groups`) this lane's calls also count against. */
  group?: string | readonly string[];
  /** Endpoints serving the lane; the grant picks one (`lease.pod`). */
  pods?: PodOptions[];
  /** Adaptive pod width (AIMD); `false` keeps every pod at its ceiling. **Default:** `{ floor: 4 }`. */
  adaptive?: { floor?: number } | false;
  /** Per-pod circuit breaker settings. */
  breaker?: BreakerOptions;
  /** Lane to use when every pod of this one is tripped or paused by a quota signal. */
  fallback?: string;
  /**
   * Longest a provider's quota signal (a 429 with `Retry-After` or a rate-limit reset) pauses a
   * pod of this lane. **Default:** 60 000 ms. A pod listed by several lanes takes the first's.
   */
  maxQuotaPauseMs?: number;
}

/** Options of `new Governor(...)`. */
export interface GovernorOptions {
  /** Configured lanes by name (e.g. `"https://gw/v1|smart"`). */
  lanes?: Record<string, LaneOptions>;
  /** Settings for lanes not configured, created on first use. **Default:** `{ limit: 0 }` (pass-through). */
  defaults?: Omit<LaneOptions, "pods" | "fallback" | "account">;
  /** Shared budgets (GPU groups) that lanes and pods join by name. */
  groups?: Record<string, { limit: number }>;
  /**
   * Keys: in flight + queued bound, the highest class they may claim, their own token and request
   * budgets, weight and tenant (`key-options.ts`).
   */
  keys?: Record<string, KeyOptions>;
  /** Tenants: groups of keys (`keys[id].tenant`) sharing one token and request budget and one weight. */
  tenants?: Record<string, TenantOptions>;
  /** Provider accounts that lanes join by name (`LaneOptions.account`): one meter across their lanes. */
  accounts?: Record<string, AccountOptions>;
  /** Time source. **Default:** `performance.now()`. Tests pass a `ManualClock`. */
  clock?: Clock;
  /** Randomness for breaker and reconnect jitter, in [0, 1). **Default:** `Math.random`. */
  random?: () => number;
  /**
   * Where budgets are counted. **Default:** a new in-memory store (one process). A fleet store
   * (budgets shared by several processes) plugs in here; see docs/architecture.md.
   */
  store?: Store;
  /**
   * The admission bound across every lane: at most `maxInflight` calls in flight, and at most
   * `maxInflight + maxQueued` admitted and not yet ended (see `Governor.enter`). **Default:** none.
   */
  admission?: { maxInflight: number; maxQueued: number };
}

/** Adaptive width settings with every default applied. */
export interface AdaptiveSettings {
  floor: number;
}

/** What a `Lane` runs on (`lane.ts`): its own bounds, validated here, every default applied. */
export interface LaneSettings {
  limit: number;
  reserve: number;
  queueLimit: number;
  queueTimeoutMs: number;
  agingMs: number;
  fallback: string | undefined;
}

/** Lane options with every default applied: a lane's settings plus what its path and pods need. */
export interface ResolvedLane extends LaneSettings, ResolvedLaneRates {
  groups: string[];
  pods: PodOptions[] | undefined;
  adaptive: AdaptiveSettings | false;
  breaker: BreakerSettings;
  maxQuotaPauseMs: number;
}

const RESOLVED = Symbol.for("sluice.resolvedOptions");

/**
 * Governor options validated once, every default applied: what the Governor runs on. Made by
 * {@link resolveGovernorOptions} (the library path) or {@link markResolved} (the gateway config,
 * already validated by its own schema). Other options (clock, random, …) pass through as given.
 */
export interface ResolvedOptions
  extends Omit<GovernorOptions, "lanes" | "defaults" | "groups" | "keys" | "tenants" | "accounts"> {
  readonly lanes: Readonly<Record<string, ResolvedLane>>;
  /** Settings of a lane created on first use (no pods, no fallback). */
  readonly defaults: ResolvedLane;
  readonly groups: Readonly<Record<string, { limit: number }>>;
  readonly keys: Readonly<Record<string, ResolvedKey>>;
  /** Tenants by name; absent = none. */
  readonly tenants?: Readonly<Record<string, ResolvedTenant>>;
  /** Provider accounts; absent = none. */
  readonly accounts?: Readonly<Record<string, ResolvedAccount>>;
  readonly [RESOLVED]: true;
}

/** True for options that went through {@link resolveGovernorOptions} or {@link markResolved}. */
export function isResolvedOptions(o: unknown): o is ResolvedOptions {
  return isBranded(o);
}

/** True for a lane that {@link resolveLane} or {@link markResolved} produced. */
function isBranded(o: unknown): boolean {
  return typeof o === "object" && o !== null && (o as { [RESOLVED]?: true })[RESOLVED] === true;
}

// Lanes carry the brand too, so resolveLane and validateGovernorOptions pass resolved input through
// unchanged: nothing is validated twice. Non-enumerable, so a spread copy (which may then be
// edited) is not branded and is validated like any options.
const brand = <T extends object>(o: T): T => Object.defineProperty(o, RESOLVED, { value: true });

/**
 * Brands options built from an already-validated source (the gateway config, whose schema checks
 * every value these checks would) so they are not validated a second time. No check runs here.
 */
export function markResolved(o: Omit<ResolvedOptions, typeof RESOLVED>): ResolvedOptions {
  for (const lane of Object.values(o.lanes)) brand(lane);
  brand(o.defaults);
  return brand({ ...o }) as ResolvedOptions;
}

/**
 * Validates `options` (ConfigError with path, expected and received for the first bad value) and
 * applies every default. Options already resolved are returned as they are.
 */
export function resolveGovernorOptions(options: GovernorOptions | ResolvedOptions = {}): ResolvedOptions {
  if (isResolvedOptions(options)) return options;
  validateGovernorOptions(options);
  const groups = options.groups ?? {};
  const lanes: Record<string, ResolvedLane> = {};
  for (const [name, lane] of Object.entries(options.lanes ?? {}))
    lanes[name] = resolveLane(lane, {}, `lanes.${name}`, groups);
  const tenants = resolveTenants(options.tenants);
  const keys = resolveKeys(options.keys, tenants);
  return markResolved({
    ...options,
    lanes,
    defaults: resolveLane(undefined, options.defaults ?? {}, "defaults", groups),
    groups,
    keys,
    tenants,
    accounts: resolveAccounts(options.accounts, accountShares(lanes)),
  });
}

/** The lane a Governor creates on first use when no `defaults` are given: pass-through. */
export function passThroughLane(): ResolvedLane {
  return resolveLane(undefined, {}, "defaults", {});
}

/** The reserve rule: at most `limit − 1` (0 when that is negative), so every class keeps a slot. */
export function clampReserve(reserve: number, limit: number): number {
  return Math.min(reserve, Math.max(0, limit - 1));
}

/** A lane's queue limit when none is given: `DEFAULTS.lane.queueLimitPerSlot` waiters per slot. */
export function defaultQueueLimit(limit: number): number {
  return DEFAULTS.lane.queueLimitPerSlot * limit;
}

const LANE_KEYS = [
  "limit",
  "reserve",
  "queueLimit",
  "queueTimeoutMs",
  "agingMs",
  "group",
  "pods",
  "adaptive",
  "breaker",
  "fallback",
  "maxQuotaPauseMs",
  ...LANE_RATE_KEYS,
] as const;

/**
 * Applies defaults to a lane's options and validates them; `path` prefixes error paths. A lane
 * already resolved (by this function or {@link markResolved}) is returned as a copy, unchecked.
 */
export function resolveLane(
  raw: LaneOptions | undefined,
  base: LaneOptions,
  path: string,
  groups: Record<string, { limit: number }>,
): ResolvedLane {
  if (isBranded(raw)) return brand({ ...(raw as ResolvedLane) });
  if (raw === undefined && isBranded(base)) return brand({ ...(base as ResolvedLane) });
  const o: LaneOptions = { ...base, ...(raw ?? {}) };
  check(typeof o === "object" && o !== null, path, "an object", raw);
  knownKeys(o, LANE_KEYS, path);
  let pods: PodOptions[] | undefined;
  if (o.pods !== undefined) {
    check(Array.isArray(o.pods) && o.pods.length > 0, `${path}.pods`, "a non-empty array", o.pods);
    const seen = new Set<string>();
    pods = o.pods.map((p, i) => {
      const at = `${path}.pods[${i}]`;
      check(typeof p === "object" && p !== null, at, "an object", p);
      check(typeof p.id === "string" && p.id.length > 0, `${at}.id`, "a non-empty string", p.id);
      check(!seen.has(p.id), `${at}.id`, "an id not used by another pod of this lane", p.id);
      seen.add(p.id);
      check(isInt(p.maxInflight, 1), `${at}.maxInflight`, "an integer ≥ 1", p.maxInflight);
      if (p.gpuGroup !== undefined)
        check(
          p.gpuGroup in groups,
          `${at}.gpuGroup`,
          `one of the groups (${Object.keys(groups).join(", ") || "none configured"})`,
          p.gpuGroup,
        );
      return { ...p };
    });
  }
  const limit = o.limit ?? (pods ? pods.reduce((s, p) => s + p.maxInflight, 0) : DEFAULTS.lane.limit);
  check(isInt(limit, 0), `${path}.limit`, "an integer ≥ 0 (0 = pass-through)", limit);
  check(!(limit === 0 && pods), `${path}.limit`, "an integer ≥ 1 for a lane with pods", limit);
  const reserveRaw = o.reserve ?? DEFAULTS.lane.reserve;
  check(isInt(reserveRaw, 0), `${path}.reserve`, "an integer ≥ 0", reserveRaw);
  const queueLimit = o.queueLimit ?? defaultQueueLimit(limit);
  check(isInt(queueLimit, 0), `${path}.queueLimit`, "an integer ≥ 0", queueLimit);
  const queueTimeoutMs = o.queueTimeoutMs ?? DEFAULTS.lane.queueTimeoutMs;
  check(
    isNum(queueTimeoutMs, 0) && queueTimeoutMs > 0 && queueTimeoutMs <= MAX_TIMER_MS,
    `${path}.queueTimeoutMs`,
    `a number of ms > 0 and at most ${MAX_TIMER_MS} (the longest timer Node can set, ~24.8 days)`,
    queueTimeoutMs,
  );
  const agingMs = o.agingMs ?? DEFAULTS.lane.agingMs;
  check(isNum(agingMs, 0) && agingMs > 0, `${path}.agingMs`, "a number of ms > 0", agingMs);
  const laneGroups = o.group === undefined ? [] : typeof o.group === "string" ? [o.group] : [...o.group];
  for (const g of laneGroups) {
    const known = Object.keys(groups).join(", ") || "none configured";
    check(typeof g === "string" && g in groups, `${path}.group`, `one of the groups (${known})`, g);
  }
  let adaptive: AdaptiveSettings | false = { floor: DEFAULTS.adaptive.floor };
  if (o.adaptive === false) adaptive = false;
  else if (o.adaptive !== undefined) {
    check(
      typeof o.adaptive === "object" && o.adaptive !== null,
      `${path}.adaptive`,
      "false or an object",
      o.adaptive,
    );
    knownKeys(o.adaptive, ["floor"], `${path}.adaptive`);
    const floor = o.adaptive.floor ?? DEFAULTS.adaptive.floor;
    check(isInt(floor, 1), `${path}.adaptive.floor`, "an integer ≥ 1", floor);
    adaptive = { floor };
  }
  const breaker = resolveBreaker(o.breaker, `${path}.breaker`);
  const maxQuotaPauseMs = o.maxQuotaPauseMs ?? DEFAULTS.quota.maxPauseMs;
  check(isNum(maxQuotaPauseMs, 0), `${path}.maxQuotaPauseMs`, "a number of ms ≥ 0", maxQuotaPauseMs);
  // The reserve is clamped, not refused: non-interactive work always keeps at least one slot.
  const reserve = clampReserve(reserveRaw, limit);
  return brand({
    limit,
    reserve,
    queueLimit,
    queueTimeoutMs,
    agingMs,
    groups: laneGroups,
    pods,
    adaptive,
    breaker,
    fallback: o.fallback,
    maxQuotaPauseMs,
    ...resolveLaneRates(o, path, reserveShare(reserve, limit)),
  });
}

/**
 * Validates the top-level options (groups, keys, clock, random, fallbacks); each lane is
 * validated as it is resolved ({@link resolveLane}). {@link resolveGovernorOptions} runs both.
 */
export function validateGovernorOptions(o: GovernorOptions | ResolvedOptions): void {
  if (isResolvedOptions(o)) return;
  check(typeof o === "object" && o !== null, "options", "an object", o);
  knownKeys(
    o,
    ["lanes", "defaults", "groups", "keys", "tenants", "accounts", "clock", "random", "store", "admission"],
    "options",
  );
  if (o.admission !== undefined) {
    check(typeof o.admission === "object" && o.admission !== null, "admission", "an object", o.admission);
    knownKeys(o.admission, ["maxInflight", "maxQueued"], "admission");
    check(
      isInt(o.admission.maxInflight, 1),
      "admission.maxInflight",
      "an integer ≥ 1",
      o.admission.maxInflight,
    );
    check(isInt(o.admission.maxQueued, 0), "admission.maxQueued", "an integer ≥ 0", o.admission.maxQueued);
  }
  if (o.store !== undefined)
    check(
      typeof o.store?.take === "function" && typeof o.store?.give === "function",
      "store",
      "a Store (e.g. new MemoryStore())",
      o.store,
    );
  for (const [name, g] of Object.entries(o.groups ?? {})) {
    check(isInt(g?.limit, 1), `groups.${name}.limit`, "an integer ≥ 1", g?.limit);
  }
  resolveKeys(o.keys, resolveTenants(o.tenants));
  if (o.clock !== undefined)
    check(typeof o.clock?.now === "function", "clock", "an object with now()", o.clock);
  if (o.random !== undefined)
    check(typeof o.random === "function", "random", "a function returning a number in [0, 1)", o.random);
  const lanes = o.lanes ?? {};
  const accounts = Object.keys(o.accounts ?? {});
  for (const [name, lane] of Object.entries(lanes)) {
    if (lane?.account !== undefined)
      check(
        accounts.includes(lane.account),
        `lanes.${name}.account`,
        `one of the accounts (${accounts.join(", ") || "none configured"})`,
        lane.account,
      );
    if (lane?.fallback !== undefined)
      check(
        lane.fallback in lanes && lane.fallback !== name,
        `lanes.${name}.fallback`,
        "the name of another configured lane",
        lane.fallback,
      );
  }
}
