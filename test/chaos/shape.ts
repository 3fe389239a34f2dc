/**
 * The fleet the chaos run builds, in one place: its limits, its client keys and the YAML each
 * replica is started with. Small numbers on purpose, so that a handful of calls fills every
 * budget and each fault lands on a fleet at its limits.
 */
import { createHash } from "node:crypto";

export type Priority = "interactive" | "default" | "bulk";

export interface ClientKey {
  readonly id: string;
  readonly token: string;
  /** `auth.keys[].max_inflight`: calls in flight + queued, fleet-wide. */
  readonly maxInflight?: number;
  readonly maxPriority: Priority;
}

export interface FleetShape {
  readonly replicas: number;
  /** The model's `max_concurrent_requests`: calls at every pod together. */
  readonly laneLimit: number;
  /** Slots only interactive calls may take. */
  readonly reserve: number;
  readonly pods: number;
  /** Each pod's `max_inflight`. */
  readonly podLimit: number;
  readonly leaseTtlMs: number;
  readonly expectedReplicas: number;
  readonly queueTimeoutS: number;
  readonly keys: readonly ClientKey[];
}

export const MODEL = "m";

export function defaultShape(replicas: number): FleetShape {
  return {
    replicas,
    laneLimit: 6,
    reserve: 1,
    pods: 2,
    podLimit: 4,
    leaseTtlMs: 3000,
    expectedReplicas: replicas,
    queueTimeoutS: 10,
    keys: [
      { id: "k-top", token: "chaos-top", maxPriority: "interactive" },
      { id: "k-bound", token: "chaos-bound", maxInflight: 3, maxPriority: "default" },
      { id: "k-free", token: "chaos-free", maxPriority: "default" },
    ],
  };
}

/** The heartbeat's interval: a third of the lease (docs/fleet.md, "Crash safety"). */
export const heartbeatMs = (shape: FleetShape): number => shape.leaseTtlMs / 3;

/**
 * One replica's config file. `storeUrl` is its own TCP proxy in front of the shared Redis;
 * `variant` changes a harmless setting, so a SIGHUP reload has something to apply.
 */
export function replicaYaml(
  shape: FleetShape,
  storeUrl: string,
  prefix: string,
  podUrls: readonly string[],
  variant = 0,
): string {
  const sha = (token: string) => createHash("sha256").update(token).digest("hex");
  const keys = shape.keys.map((k) => {
    const bound = k.maxInflight === undefined ? "" : `, max_inflight: ${k.maxInflight}`;
    return `    - { id: ${k.id}, sha256: "${sha(k.token)}", max_priority: ${k.maxPriority}${bound} }`;
  });
  // No metrics_url: a poll of the pod's metrics runs a scheduler pass every second, which would
  // wake a waiter that the fleet's own wake-ups lost, and hide the loss from the verdict.
  const pods = podUrls.map((url) => `      - { url: "${url}", max_inflight: ${shape.podLimit} }`);
  return [
    `store: ${storeUrl}`,
    "fleet:",
    `  prefix: "${prefix}"`,
    `  lease_ttl_s: ${shape.leaseTtlMs / 1000}`,
    "  on_store_error: local",
    `  expected_replicas: ${shape.expectedReplicas}`,
    "admission: { max_concurrency: 64 }",
    "auth:",
    "  keys:",
    ...keys,
    "models:",
    `  - name: ${MODEL}`,
    `    max_concurrent_requests: ${shape.laneLimit}`,
    `    reserve: ${shape.reserve}`,
    "    queue_limit: 64",
    `    queue_timeout_s: ${shape.queueTimeoutS + variant}`,
    "    pods:",
    ...pods,
    "",
  ].join("\n");
}
