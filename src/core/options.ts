/**
 * The Governor's options, validated once at construction (STYLE G7): a bad value throws
 * `ConfigError` naming the option's path, what was expected and what arrived, so the core never
 * sees an invalid value. Units are in the names (STYLE G8).
 */
import type { BreakerOptions } from "./breaker.js";
import type { Clock } from "./clock.js";
import { ConfigError } from "./errors.js";
import { PRIORITIES, type Priority, rankOf } from "./priority.js";

/** One endpoint serving a lane. */
export interface PodOptions {
  /** Where to send calls, usually the base URL; also the pod's name in snapshots. */
  id: string;
  /** The operator's ceiling for this pod (its `--max-num-seqs`); adaptive width starts here. */
  maxInflight: number;
  /** GPU group this pod's calls also count against (a key of `groups`). */
  gpuGroup?: string;
}

/** Options of one lane (DESIGN §1, §1.1). */
export interface LaneOptions {
  /** Calls in flight at once; 0 = pass-through (no waiting, no counting). **Default:** the sum of its pods' `maxInflight`, else `defaults.limit`. */
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
  /** Lane to use when every pod of this one is tripped. */
  fallback?: string;
}

/** Options of `new Governor(...)`. */
export interface GovernorOptions {
  /** Configured lanes by name (e.g. `"https://gw/v1|smart"`). */
  lanes?: Record<string, LaneOptions>;
  /** Settings for lanes not configured, created on first use. **Default:** `{ limit: 0 }` (pass-through). */
  defaults?: Omit<LaneOptions, "pods" | "fallback">;
  /** Shared budgets (GPU groups) that lanes and pods join by name. */
  groups?: Record<string, { limit: number }>;
  /** Keys (tenants): in flight + queued bound, and the highest class they may claim. */
  keys?: Record<string, { maxInflight: number; maxPriority?: Priority }>;
  /** Time source. **Default:** `performance.now()`. Tests pass a `ManualClock`. */
  clock?: Clock;
  /** Randomness for breaker and reconnect jitter, in [0, 1). **Default:** `Math.random`. */
  random?: () => number;
}

/** Lane options with every default applied. */
export interface ResolvedLane {
  limit: number;
  reserve: number;
  queueLimit: number;
  queueTimeoutMs: number;
  agingMs: number;
  groups: string[];
  pods: PodOptions[] | undefined;
  adaptive: { floor: number } | false;
  breaker: Required<BreakerOptions>;
  fallback: string | undefined;
}

function check(ok: boolean, path: string, expected: string, received: unknown): void {
  if (!ok) throw new ConfigError(path, expected, received);
}

const isInt = (v: unknown, min: number): v is number =>
  typeof v === "number" && Number.isInteger(v) && v >= min;
const isNum = (v: unknown, min: number): v is number =>
  typeof v === "number" && Number.isFinite(v) && v >= min;

function knownKeys(obj: object, allowed: readonly string[], path: string): void {
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k))
      throw new ConfigError(`${path}.${k}`, `one of ${allowed.join(", ")}`, k, "unknown option");
  }
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
] as const;

/** Applies defaults to a lane's options and validates them; `path` prefixes error paths. */
export function resolveLane(
  raw: LaneOptions | undefined,
  base: LaneOptions,
  path: string,
  groups: Record<string, { limit: number }>,
): ResolvedLane {
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
  const limit = o.limit ?? (pods ? pods.reduce((s, p) => s + p.maxInflight, 0) : 0);
  check(isInt(limit, 0), `${path}.limit`, "an integer ≥ 0 (0 = pass-through)", limit);
  check(!(limit === 0 && pods), `${path}.limit`, "an integer ≥ 1 for a lane with pods", limit);
  const reserveRaw = o.reserve ?? 1;
  check(isInt(reserveRaw, 0), `${path}.reserve`, "an integer ≥ 0", reserveRaw);
  const queueLimit = o.queueLimit ?? 4 * limit;
  check(isInt(queueLimit, 0), `${path}.queueLimit`, "an integer ≥ 0", queueLimit);
  const queueTimeoutMs = o.queueTimeoutMs ?? 30_000;
  check(
    isNum(queueTimeoutMs, 0) && queueTimeoutMs > 0,
    `${path}.queueTimeoutMs`,
    "a number of ms > 0",
    queueTimeoutMs,
  );
  const agingMs = o.agingMs ?? 60_000;
  check(isNum(agingMs, 0) && agingMs > 0, `${path}.agingMs`, "a number of ms > 0", agingMs);
  const laneGroups = o.group === undefined ? [] : typeof o.group === "string" ? [o.group] : [...o.group];
  for (const g of laneGroups) {
    const known = Object.keys(groups).join(", ") || "none configured";
    check(typeof g === "string" && g in groups, `${path}.group`, `one of the groups (${known})`, g);
  }
  let adaptive: { floor: number } | false = { floor: 4 };
  if (o.adaptive === false) adaptive = false;
  else if (o.adaptive !== undefined) {
    const floor = o.adaptive.floor ?? 4;
    check(isInt(floor, 1), `${path}.adaptive.floor`, "an integer ≥ 1", floor);
    adaptive = { floor };
  }
  const b = o.breaker ?? {};
  const breaker: Required<BreakerOptions> = {
    failThreshold: b.failThreshold ?? 1,
    baseCooldownMs: b.baseCooldownMs ?? 500,
    maxCooldownMs: b.maxCooldownMs ?? 30_000,
    backoffFactor: b.backoffFactor ?? 2,
  };
  check(
    isInt(breaker.failThreshold, 1),
    `${path}.breaker.failThreshold`,
    "an integer ≥ 1",
    breaker.failThreshold,
  );
  check(
    isNum(breaker.baseCooldownMs, 0),
    `${path}.breaker.baseCooldownMs`,
    "a number of ms ≥ 0",
    breaker.baseCooldownMs,
  );
  check(
    isNum(breaker.maxCooldownMs, breaker.baseCooldownMs),
    `${path}.breaker.maxCooldownMs`,
    `a number of ms ≥ baseCooldownMs (${breaker.baseCooldownMs})`,
    breaker.maxCooldownMs,
  );
  check(
    isNum(breaker.backoffFactor, 1),
    `${path}.breaker.backoffFactor`,
    "a number ≥ 1",
    breaker.backoffFactor,
  );
  // The reserve is clamped, not refused: non-interactive work always keeps at least one slot.
  const reserve = Math.min(reserveRaw, Math.max(0, limit - 1));
  return {
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
  };
}

/** Validates the top-level options; lanes are resolved by the caller with {@link resolveLane}. */
export function validateGovernorOptions(o: GovernorOptions): void {
  check(typeof o === "object" && o !== null, "options", "an object", o);
  knownKeys(o, ["lanes", "defaults", "groups", "keys", "clock", "random"], "options");
  for (const [name, g] of Object.entries(o.groups ?? {})) {
    check(isInt(g?.limit, 1), `groups.${name}.limit`, "an integer ≥ 1", g?.limit);
  }
  for (const [name, k] of Object.entries(o.keys ?? {})) {
    check(isInt(k?.maxInflight, 1), `keys.${name}.maxInflight`, "an integer ≥ 1", k?.maxInflight);
    if (k.maxPriority !== undefined)
      check(
        rankOf(k.maxPriority) !== undefined,
        `keys.${name}.maxPriority`,
        `one of ${PRIORITIES.join(", ")}`,
        k.maxPriority,
      );
  }
  if (o.clock !== undefined)
    check(typeof o.clock?.now === "function", "clock", "an object with now()", o.clock);
  const lanes = o.lanes ?? {};
  for (const [name, lane] of Object.entries(lanes)) {
    if (lane?.fallback !== undefined)
      check(
        lane.fallback in lanes && lane.fallback !== name,
        `lanes.${name}.fallback`,
        "the name of another configured lane",
        lane.fallback,
      );
  }
}
