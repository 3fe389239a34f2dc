/**
 * The grant's one round trip: `grant.lua` for a path of concurrency budgets only, `grant-path.lua`
 * when the path has token or request buckets or quota pauses, or when the lane's part is asked for
 * with its waiters key (priority across replicas: the script leaves room for better waiters that
 * other replicas advertise). The argument layouts are the scripts' headers'.
 */
import type { MeteredPart } from "./rates.js";
import type { GrantAnswer, GrantRequest } from "./script-calls.js";
import * as script from "./script-calls.js";
import { isReplyCode, type ScriptClient } from "./scripts.js";

export type { GrantAnswer, GrantRequest } from "./script-calls.js";

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

/** Runs the grant's script: `grant.lua` for concurrency budgets alone, else `grant-path.lua`. */
export function runGrant(client: ScriptClient, g: GrantRequest): Promise<GrantAnswer> {
  return g.metered === null && g.waitKey === undefined
    ? script.grant(client, g)
    : script.grantPath(client, g);
}

interface Asked {
  readonly request: GrantRequest;
  resolve(answer: GrantAnswer): void;
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
  askKnown(request: GrantRequest): Promise<GrantAnswer> {
    // Not an async function: its frame would be one more object per grant (docs/bench-fleet.md).
    return this.ask(request).catch(async (error: unknown) => {
      if (this.reRegister === undefined || !isReplyCode(error, "SLUICE_UNKNOWN_REPLICA")) throw error;
      await this.reRegister();
      return await this.ask(request);
    });
  }

  /** One grant's answer, as `runGrant` gives it. */
  ask(request: GrantRequest): Promise<GrantAnswer> {
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
    script
      .grantMany(
        this.client,
        asked.map((a) => a.request),
      )
      .then(
        (answers) => {
          for (let i = 0; i < asked.length; i++) asked[i]!.resolve(answers[i]!);
        },
        (error: unknown) => {
          for (const a of asked) a.reject(error);
        },
      );
  }
}
