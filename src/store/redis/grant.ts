/**
 * The grant's one round trip: `grant.lua` for a path of concurrency budgets only, `grant-path.lua`
 * when the path has token or request buckets or quota pauses, or when the lane's part is asked for
 * with its waiters key (priority across replicas: the script leaves room for better waiters that
 * other replicas advertise). The argument layouts are the scripts' headers'.
 */
import type { MeteredPart } from "./rates.js";
import { isReplyCode, runScript, type ScriptClient } from "./scripts.js";

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

/**
 * The grant request of a path's fleet part, built field by field. Not `{ ...part, ...lease }`:
 * at 5,000 grants/s the spread's objects were promoted to the old generation at ~1 KB a grant
 * (V8's object-spread clone; `--trace-gc-nvp`), and the scavenges copying them took 4–6 ms each —
 * the grant p99. Built like this nothing is promoted (docs/bench-fleet.md).
 */
export function grantRequest(
  part: {
    readonly keys: readonly string[];
    readonly limits: readonly number[];
    readonly waitKey: string | undefined;
  },
  lease: { readonly replicasKey: string; readonly replica: string },
  metered: MeteredPart | null,
  effective: number,
): GrantRequest {
  return {
    replicasKey: lease.replicasKey,
    replica: lease.replica,
    keys: part.keys,
    limits: part.limits,
    metered,
    waitKey: part.waitKey,
    effective,
  };
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

interface Asked {
  readonly request: GrantRequest;
  resolve(reply: unknown[]): void;
  reject(error: unknown): void;
}

/**
 * The grants of one event-loop turn in one script (`grant-many.lua`): at 64 concurrent callers a
 * turn asks for dozens, and one script reads the time, the lease and each hash once and costs
 * one command instead of one each. A grant with buckets or pauses on its path runs
 * `grant-path.lua` on its own; a turn with one grant runs its usual script. Sent when the turn's
 * scripts leave (`flush`, from `turnPipelined`'s `beforeSend`), in the order asked.
 */
export class FleetGrants {
  #asked: Asked[] = [];

  constructor(
    readonly client: ScriptClient,
    /** Schedules the turn's write (the grants join it through `flush`). */
    readonly schedule: () => void,
    /** Writes back what this replica holds when Redis has forgot it (the store's heartbeat). */
    readonly reRegister?: () => Promise<void>,
  ) {}

  /** `ask`; when Redis has forgotten this replica, once more after it re-registered. */
  askKnown(request: GrantRequest): Promise<unknown[]> {
    // Not an async function: its frame would be one more object per grant (docs/bench-fleet.md).
    return this.ask(request).catch(async (error: unknown) => {
      if (this.reRegister === undefined || !isReplyCode(error, "SLUICE_UNKNOWN_REPLICA")) throw error;
      await this.reRegister();
      return await this.ask(request);
    });
  }

  /** One grant's answer, as `runGrant` gives it. */
  ask(request: GrantRequest): Promise<unknown[]> {
    if (request.metered !== null) return runGrant(this.client, request);
    return new Promise((resolve, reject) => {
      if (this.#asked.push({ request, resolve, reject }) === 1) this.schedule();
    });
  }

  /** Sends the turn's grants: one script for all of them. */
  flush(): void {
    const asked = this.#asked;
    if (asked.length === 0) return;
    this.#asked = [];
    if (asked.length === 1) {
      runGrant(this.client, asked[0]!.request).then(asked[0]!.resolve, asked[0]!.reject);
      return;
    }
    const first = asked[0]!.request;
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
    const args: (string | number)[] = [first.replica, asked.length];
    for (const { request: r } of asked) {
      args.push(r.keys.length);
      for (let i = 0; i < r.keys.length; i++) args.push(indexOf(r.keys[i]!), r.limits[i]!);
      args.push(r.waitKey === undefined ? 0 : indexOf(r.waitKey), r.effective);
    }
    runScript(this.client, "grant-many", keys, args).then(
      (answers) => {
        for (let i = 0; i < asked.length; i++) asked[i]!.resolve((answers as unknown[][])[i]!);
      },
      (error: unknown) => {
        for (const a of asked) a.reject(error);
      },
    );
  }
}
