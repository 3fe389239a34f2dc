/**
 * Each of the fleet store's Lua scripts (src/store/redis/lua) behind one typed function: its
 * arguments by name, laid out as the script's header says, and its reply read once here into a
 * typed answer. A reply of another shape (a script and its caller out of step) throws
 * `ScriptReplyError` naming the script, rather than reaching the mirror as `undefined` or `NaN`:
 * the callers treat it as a failed round trip. Nothing else in the store calls `runScript`. The
 * grant's three scripts are in `grant-calls.ts` (re-exported here, so callers import one module);
 * the shape checks and the error in `script-replies.ts`.
 *
 * Replies are read without copying what the callers keep anyway (one array of counts per grant,
 * as before): the grant runs 5,000 times a second (docs/bench-fleet.md).
 */
import { int, ints, levelsOf, list } from "./script-replies.js";
import { runScript, type ScriptClient } from "./scripts.js";

export * from "./grant-calls.js";
export { ScriptReplyError } from "./script-replies.js";

/** One key's answer to `arrive.lua`. */
export interface ArriveAnswer {
  /** Slots taken, for the key's first that many arrivals. */
  readonly taken: number;
  /** Calls the other live replicas hold on the key. */
  readonly others: number;
}

/** `arrive.lua`: `asked[i]` arrivals on the key hash `keys[i]` of bound `bounds[i]`. */
export async function arrive(
  client: ScriptClient,
  a: {
    replicasKey: string;
    replica: string;
    keys: readonly string[];
    asked: readonly number[];
    bounds: readonly number[];
  },
): Promise<ArriveAnswer[]> {
  const args: (string | number)[] = [a.replica];
  for (let i = 0; i < a.keys.length; i++) args.push(a.asked[i]!, a.bounds[i]!);
  const reply = list(
    "arrive",
    await runScript(client, "arrive", [a.replicasKey, ...a.keys], args),
    a.keys.length,
  );
  return reply.map((pair) => {
    const [taken, others] = list("arrive", pair, 2);
    return { taken: int("arrive", taken), others: int("arrive", others) };
  });
}

/**
 * `release.lua`: gives back `counts[i]` slots on `keys[i]`, publishing the freed budgets on
 * `channel` ('' for none) when another replica waits. Resolves whether it published.
 * `afterFallback` as `runScript`'s.
 */
export async function release(
  client: ScriptClient,
  r: {
    indexKey: string;
    replica: string;
    channel: string;
    keys: readonly string[];
    counts: readonly number[];
  },
  afterFallback?: () => void,
): Promise<boolean> {
  const keys = [r.indexKey, ...r.keys];
  const reply = await runScript(client, "release", keys, [r.replica, r.channel, ...r.counts], afterFallback);
  return int("release", reply) === 1;
}

/** What `heartbeat.lua` answers (always asked with its exact-mark, so with the settling picture). */
export interface HeartbeatAnswer {
  /** Redis had forgotten this replica: it registered again, its counts written back. */
  readonly reRegistered: boolean;
  /** Redis's time (ms). */
  readonly redisNowMs: number;
  /** Calls the other live replicas hold on each budget. */
  readonly others: number[];
  /** The other live replicas and when each was last marked exact (ms; 0 = never). */
  readonly live: ReadonlyArray<readonly [replica: string, markedMs: number]>;
  /** For each budget, the other live replicas' counts one by one. */
  readonly each: readonly number[][];
}

/** `heartbeat.lua`: renews the lease; `counts[i]` is what this replica holds on `keys[i]`. */
export async function heartbeat(
  client: ScriptClient,
  h: {
    replicasKey: string;
    replica: string;
    ttlMs: number;
    keys: readonly string[];
    counts: readonly number[];
    /** Write the counts back even when the replica is known (after an outage). */
    rewrite: boolean;
    /** This replica's fields are exact after the script (`{P}:synced`). */
    exact: boolean;
  },
): Promise<HeartbeatAnswer> {
  const n = h.keys.length;
  const args = [h.replica, h.ttlMs, ...h.counts, h.rewrite ? 1 : 0, h.exact ? 1 : 0];
  const r = list("heartbeat", await runScript(client, "heartbeat", [h.replicasKey, ...h.keys], args), n + 4);
  const flat = list("heartbeat", r[n + 2]);
  const live: Array<readonly [string, number]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) live.push([String(flat[i]), int("heartbeat", flat[i + 1])]);
  const each = list("heartbeat", r[n + 3], n).map((counts) => {
    const c = list("heartbeat", counts);
    return ints("heartbeat", c, 0, c.length);
  });
  return {
    reRegistered: int("heartbeat", r[0]) === 1,
    redisNowMs: int("heartbeat", r[1]),
    others: ints("heartbeat", r, 2, n),
    live,
    each,
  };
}

// ---- buckets and pauses: settle.lua, levels.lua, pause.lua ---------------------------------------

/** One bucket's settlement (`settle.lua`'s arguments for it). */
export type SettleRow = readonly [
  capacity: number,
  delta: number,
  unused: number,
  lagMs: number,
  spent: number,
];

/** `settle.lua`: applies settlement `id` once to the buckets `keys`; resolves each bucket's level after it. */
export async function settle(
  client: ScriptClient,
  s: { appliedKey: string; id: string; keptMs: number; keys: readonly string[]; rows: readonly SettleRow[] },
): Promise<number[]> {
  const args = [s.id, s.keptMs, ...s.rows.flat()];
  const reply = list(
    "settle",
    await runScript(client, "settle", [s.appliedKey, ...s.keys], args),
    s.keys.length,
  );
  return levelsOf(reply, 0, reply.length);
}

/** What `levels.lua` reads. */
export interface LevelsAnswer {
  readonly levels: readonly number[];
  readonly pausesLeftMs: readonly number[];
}

/** `levels.lua`: the buckets `bucketKeys` (of capacities `caps`) and the pauses `pauseKeys`, unchanged. */
export async function levels(
  client: ScriptClient,
  l: { bucketKeys: readonly string[]; caps: readonly number[]; pauseKeys: readonly string[] },
): Promise<LevelsAnswer> {
  const b = l.bucketKeys.length;
  const p = l.pauseKeys.length;
  const reply = await runScript(client, "levels", [...l.bucketKeys, ...l.pauseKeys], l.caps);
  const r = list("levels", reply, b + p);
  return {
    levels: levelsOf(r, 0, b),
    pausesLeftMs: ints("levels", r, b, p),
  };
}

/** `pause.lua`: pauses an account fleet-wide for `ms` (never shortening a longer pause); resolves the ms left. */
export async function pause(client: ScriptClient, key: string, ms: number): Promise<number> {
  return int("pause", await runScript(client, "pause", [key], [ms]));
}

// ---- advertisement and pods: advertise.lua, pod-share.lua, pod-states.lua -------------------------

/** What `advertise.lua` answers. */
export interface AdvertiseAnswer {
  /** Waiters hashes whose total went down (published). */
  readonly fewer: number;
  /** Ms until the soonest lease of another live replica ends; -1 when there is none. */
  readonly soonestLeaseEndMs: number;
  /**
   * Per hash written, this replica's flows that wait on other live replicas too: lines
   * "<class> <replicas> <token>" ('' for none; flow-advert.ts reads them).
   */
  readonly spreads: readonly string[];
}

/** `advertise.lua`: this replica's waiters on each hash of `keys` (`values[i]`, '' = none left there). */
export async function advertise(
  client: ScriptClient,
  a: {
    indexKey: string;
    replicasKey: string;
    replica: string;
    channel: string;
    ttlMs: number;
    /** Whether this replica waits on some lane at all. */
    waiting: boolean;
    keys: readonly string[];
    values: readonly string[];
  },
): Promise<AdvertiseAnswer> {
  const keys = [a.indexKey, a.replicasKey, ...a.keys];
  const args = [a.replica, a.channel, a.ttlMs, a.waiting ? "1" : "0", ...a.values];
  const [fewer, soonest, spreads] = list("advertise", await runScript(client, "advertise", keys, args), 3);
  return {
    fewer: int("advertise", fewer),
    soonestLeaseEndMs: int("advertise", soonest),
    spreads: list("advertise", spreads).map(String),
  };
}

/** `pod-share.lua`: keeps `state` (JSON) under `key` for `keepMs` and publishes `message` on `channel`. */
export async function podShare(
  client: ScriptClient,
  s: { key: string; state: string; channel: string; message: string; keepMs: number },
): Promise<void> {
  await runScript(client, "pod-share", [s.key], [s.state, s.channel, s.message, s.keepMs]);
}

/** One pod's kept state (`pod-states.lua`): its JSON (null when none is kept) and its age. */
export interface KeptPodState {
  readonly json: string | null;
  readonly ageMs: number;
}

/** `pod-states.lua`: the kept state of each pod hash of `keys`. */
export async function podStates(client: ScriptClient, keys: readonly string[]): Promise<KeptPodState[]> {
  const r = list("pod-states", await runScript(client, "pod-states", keys, []), 2 * keys.length);
  return keys.map((_, i) => {
    const json = r[2 * i];
    return { json: typeof json === "string" ? json : null, ageMs: Number(r[2 * i + 1]) };
  });
}
