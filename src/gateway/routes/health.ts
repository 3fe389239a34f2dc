/**
 * `GET /readyz`: can this gateway serve every model it is configured for, and if not, why not.
 *
 * A pod is **out** while its breaker is open and cooling down (`breaker: "open"` with
 * `reopens_in_s > 0`: a pod whose cooldown is over takes its half-open probe, so it is not out)
 * or while a provider's quota pause holds it (`quota_paused_s > 0`). A lane is **down** when it
 * has pods and every one of them is out, and its fallback (one hop, as calls are routed) is down
 * too or absent: its calls are refused at once (503 `upstream_unavailable`, 429 `quota_paused`)
 * until a pod comes back. The gateway is **ready** (200) when it is not draining and no lane is
 * down and the fleet store (if any) is not down under `on_store_error: closed`; otherwise 503. Either way the body lists every open or half-open pod and every
 * quota-paused pod, so a dead pod beside a healthy one shows here while the gateway stays ready.
 */
import type { ServerResponse } from "node:http";
import type { PodSnapshot, Snapshot } from "../../core/snapshot.js";
import { sendJson } from "../http-error.js";

/** A pod whose breaker is not closed. */
export interface OpenPod {
  pod: string;
  lanes: string[];
  breaker: "open" | "half_open";
  /** Seconds until an open breaker allows its probe (0: due now, or half-open). */
  reopens_in_s: number;
  trips: number;
}

/** A pod held by a provider's quota pause. */
export interface PausedPod {
  pod: string;
  lanes: string[];
  quota_paused_s: number;
}

/** The `/readyz` body. */
export interface Readiness {
  ready: boolean;
  draining: boolean;
  /** Lanes that can serve nothing now (every pod out, and the fallback's too). */
  lanes_down: string[];
  open_pods: OpenPod[];
  paused_pods: PausedPod[];
  /** The fleet store's state (`memory` when there is none). Not ready while it is down under `closed`. */
  store: string;
}

/** A model's name and fallback: all readiness needs of the config. */
export interface LaneRoute {
  readonly name: string;
  readonly fallback?: string | undefined;
}

/** Whether `pod` can take no call now: tripped (open, cooling down) or quota-paused. */
export function isOut(pod: PodSnapshot): boolean {
  return (pod.breaker === "open" && pod.reopens_in_s > 0) || pod.quota_paused_s > 0;
}

/** Readiness from a snapshot (pure). */
export function readiness(snapshot: Snapshot, lanes: readonly LaneRoute[], draining: boolean): Readiness {
  // Per lane: has it pods, and is every one out?
  const allOut = new Map<string, boolean>();
  for (const pod of snapshot.pods) {
    const out = isOut(pod);
    for (const lane of pod.lanes) allOut.set(lane, (allOut.get(lane) ?? true) && out);
  }
  const byName = new Map(lanes.map((l) => [l.name, l]));
  const down = (name: string | undefined): boolean => name !== undefined && allOut.get(name) === true;
  const lanesDown = lanes
    .filter((l) => down(l.name) && (l.fallback === undefined || !byName.has(l.fallback) || down(l.fallback)))
    .map((l) => l.name);
  const open_pods: OpenPod[] = snapshot.pods
    .filter((p) => p.breaker !== "closed")
    .map((p) => ({
      pod: p.id,
      lanes: p.lanes,
      breaker: p.breaker as OpenPod["breaker"],
      reopens_in_s: p.reopens_in_s,
      trips: p.trips,
    }));
  const paused_pods: PausedPod[] = snapshot.pods
    .filter((p) => p.quota_paused_s > 0)
    .map((p) => ({ pod: p.id, lanes: p.lanes, quota_paused_s: p.quota_paused_s }));
  const store = snapshot.store?.mode ?? "memory";
  return {
    ready: !draining && lanesDown.length === 0 && store !== "closed",
    draining,
    store,
    lanes_down: lanesDown,
    open_pods,
    paused_pods,
  };
}

/** Answers `/readyz`: 200 when ready, else 503, with the {@link Readiness} body either way. */
export function serveReadyz(res: ServerResponse, r: Readiness): void {
  sendJson(res, r.ready ? 200 : 503, r);
}
