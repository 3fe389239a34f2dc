/** The fleet store's options and status (`RedisStore`). */

/** What to do while Redis cannot be reached. */
export type OnStoreError = "local" | "open" | "closed";

export interface RedisStoreOptions {
  /** `redis://[:password@]host:port[/db]` or `rediss://…`. */
  url: string;
  /** Prefix of every key (one Cluster hash tag for all of them). **Default:** `sluice`. */
  prefix?: string;
  /** This process's id in the fleet. **Default:** host:pid:random. */
  replica?: string;
  /** How long a replica's calls count after its last heartbeat. **Default:** 15 000 ms. */
  leaseTtlMs?: number;
  /** **Default:** `local`. */
  onStoreError?: OnStoreError;
  /** Replicas the fleet runs, for `local`'s static division. **Default:** 2. */
  expectedReplicas?: number;
}

/** The fleet's state as this process sees it (snapshot, `/readyz`, metrics). */
export interface FleetStatus {
  replica: string;
  /** `connected`, or the outage mode in force. */
  mode: "connected" | OnStoreError;
  /** Consecutive failed round trips. */
  errors: number;
}
