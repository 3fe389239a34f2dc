/**
 * The grant's three scripts behind typed calls (`script-calls.ts` has the others): `grant.lua`
 * for a path of concurrency budgets, `grant-path.lua` with buckets, pauses or the lane's waiters,
 * `grant-many.lua` for a turn's grants; each answer read once into a `GrantAnswer`.
 */
import type { ScriptName } from "./lua/scripts.generated.js";
import { int, ints, levelsOf, list, NONE } from "./script-replies.js";
import { runScript, type ScriptClient } from "./scripts.js";

/** The metered part of a path as the grant asks for it (`MeteredPart`, `redis/rates.ts`). */
export interface MeteredArgs {
  /** Bucket keys, then pause keys. */
  readonly keys: readonly string[];
  /** Each bucket's capacity, the amount the call takes, and the level it must leave. */
  readonly args: readonly number[];
  readonly buckets: readonly unknown[];
  /** The accounts whose pause keys follow the bucket keys. */
  readonly paused: readonly unknown[];
}

/** What one grant asks Redis. */
export interface GrantRequest {
  replicasKey: string;
  replica: string;
  /** The path's concurrency budget keys, and each one's limit for this call. */
  keys: readonly string[];
  limits: readonly number[];
  metered: MeteredArgs | null;
  /** The lane's waiters hash when the lane's part is asked for, and the call's effective class. */
  waitKey: string | undefined;
  effective: number;
}

/** With the lane's waiters hash: what other replicas wait for there (priority across replicas). */
export interface LaneAnswer {
  /** Waiters of other replicas with a strictly better class. */
  readonly better: number;
  /** The lane's limit less this replica's fair share (0 while no other replica waits with this class or better). */
  readonly beyondShare: number;
}

/** One grant's answer, whichever script ran it. */
export interface GrantAnswer {
  readonly granted: boolean;
  /** 0 when granted, else the 1-based index of the budget without room (concurrency, buckets, pauses). */
  readonly refusedAt: number;
  /** Calls the other live replicas hold on each concurrency budget of the request. */
  readonly others: number[];
  /** Each bucket's fleet level after this call. */
  readonly levels: readonly number[];
  /** Each quota pause's ms left (0 when none). */
  readonly pausesLeftMs: readonly number[];
  /** Null when the request named no waiters hash. */
  readonly lane: LaneAnswer | null;
}

function grantAnswer(script: ScriptName, reply: unknown, g: GrantRequest): GrantAnswer {
  const c = g.keys.length;
  const b = g.metered?.buckets.length ?? 0;
  const p = g.metered?.paused.length ?? 0;
  const ranked = g.waitKey !== undefined;
  const r = list(script, reply, 1 + c + b + p + (ranked ? 2 : 0));
  const outcome = int(script, r[0]);
  return {
    granted: outcome > 0,
    refusedAt: outcome > 0 ? 0 : -outcome,
    others: ints(script, r, 1, c),
    levels: b === 0 ? NONE : levelsOf(r, 1 + c, b),
    pausesLeftMs: p === 0 ? NONE : ints(script, r, 1 + c + b, p),
    lane: ranked ? { better: int(script, r[r.length - 2]), beyondShare: int(script, r[r.length - 1]) } : null,
  };
}

/** `grant.lua`: one slot on each concurrency budget of `g` (no metered part, no waiters hash). */
export async function grant(client: ScriptClient, g: GrantRequest): Promise<GrantAnswer> {
  const reply = await runScript(client, "grant", [g.replicasKey, ...g.keys], [g.replica, ...g.limits]);
  return grantAnswer("grant", reply, g);
}

/** `grant-path.lua`: the concurrency budgets, buckets and pauses of `g`, with its waiters hash if any. */
export async function grantPath(client: ScriptClient, g: GrantRequest): Promise<GrantAnswer> {
  const { metered, waitKey } = g;
  const keys = [g.replicasKey, ...g.keys, ...(metered?.keys ?? [])];
  const args = [
    g.replica,
    g.keys.length,
    metered?.buckets.length ?? 0,
    ...g.limits,
    ...(metered?.args ?? []),
  ];
  if (waitKey !== undefined) {
    keys.push(waitKey);
    args.push(g.effective);
  }
  return grantAnswer("grant-path", await runScript(client, "grant-path", keys, args), g);
}

/**
 * `grant-many.lua`: the grants of one turn, taken in order (each without a metered part), one
 * answer each. Every grant names `grants[0]`'s replica.
 */
export async function grantMany(
  client: ScriptClient,
  grants: readonly GrantRequest[],
): Promise<GrantAnswer[]> {
  const first = grants[0]!;
  const keys = [first.replicasKey];
  const index = new Map<string, number>();
  const indexOf = (key: string): number => {
    let i = index.get(key);
    if (i === undefined) {
      i = keys.push(key);
      index.set(key, i);
    }
    return i;
  };
  const args: (string | number)[] = [first.replica, grants.length];
  for (const r of grants) {
    args.push(r.keys.length);
    for (let i = 0; i < r.keys.length; i++) args.push(indexOf(r.keys[i]!), r.limits[i]!);
    args.push(r.waitKey === undefined ? 0 : indexOf(r.waitKey), r.effective);
  }
  const answers = list("grant-many", await runScript(client, "grant-many", keys, args), grants.length);
  return grants.map((g, i) => grantAnswer("grant-many", answers[i], g));
}
