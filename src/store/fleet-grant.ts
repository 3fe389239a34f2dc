/**
 * The grant's one round trip: `grant.lua` for a path of concurrency budgets only, `grant-path.lua`
 * when the path has token or request buckets or quota pauses, or when the lane's part is asked for
 * with its waiters key (priority across replicas: the script leaves room for better waiters that
 * other replicas advertise). The argument layouts are the scripts' headers'.
 */
import type { MeteredPart } from "./fleet-rates.js";
import { runScript, type ScriptClient } from "./redis-scripts.js";

/** What one grant asks Redis. */
export interface GrantRequest {
  replicasKey: string;
  replica: string;
  /** The path's concurrency budget keys, and each one's limit for this call. */
  keys: readonly string[];
  limits: readonly number[];
  metered: MeteredPart | null;
  /** The lane's waiters hash when the lane's part is asked for, and the call's effective class. */
  waitKey: string | undefined;
  effective: number;
}

/** Runs the grant script; its answer as the script returns it. */
export function runGrant(client: ScriptClient, g: GrantRequest): Promise<unknown[]> {
  const { metered, waitKey } = g;
  if (metered === null && waitKey === undefined)
    return runScript(client, "grant", [g.replicasKey, ...g.keys], [g.replica, ...g.limits]) as Promise<
      unknown[]
    >;
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
  return runScript(client, "grant-path", keys, args) as Promise<unknown[]>;
}
