/** The fleet store's options and status (`RedisStore`). */
import type { FleetOptions, OnStoreError } from "../../core/fleet-options.js";

export type { OnStoreError } from "../../core/fleet-options.js";

/**
 * A `RedisStore`'s options: where Redis is, this process's id, and the settings the fleet shares
 * (`FleetOptions`: lease TTL, outage policy, expected replicas, key prefix — each default in
 * `DEFAULTS.fleet`, each checked by `resolveFleetOptions`, as the config's `fleet:` section is).
 */
export interface RedisStoreOptions extends FleetOptions {
  /**
   * `redis://[:password@]host:port[/db]` or `rediss://…`; `redis+sentinel://…` and
   * `redis+cluster://…` for Sentinel and Cluster (docs/fleet-connections.md).
   */
  url: string;
  /** This process's id in the fleet. **Default:** host:pid:random. */
  replica?: string;
}

/** The fleet's state as this process sees it (snapshot, `/readyz`, metrics). */
export interface FleetStatus {
  replica: string;
  /** `connected`, or the outage mode in force. */
  mode: "connected" | OnStoreError;
  /** Consecutive failed round trips. */
  errors: number;
}
