/**
 * Why a lane's callers wait, in seed 002's two states (D8): the caller's next step differs.
 *
 * - `local_queue`: every slot the model servers offer is in use and callers wait for one — the
 *   lane is queueing on purpose, at its limit. An ETA comes from the queue depth and drain rate;
 *   the fix, if any, is capacity or a lower offered load.
 * - `gateway_degraded`: the servers took capacity away — a pod's breaker is not closed, a pod or
 *   the lane's account is paused by a quota signal, or AIMD narrowed a pod below its ceiling after
 *   refusals. Waits and refusals are the upstream's doing, and the capacity comes back by itself
 *   (the breaker's probe, the pause's end, AIMD's growth); a caller should look at the model
 *   servers, not at its own load.
 * - `ok`: nobody waits and nothing is degraded.
 *
 * Degraded wins when both hold: a queue behind a narrowed pod is the pod's doing. The state is on
 * every lane of the snapshot, on every capacity refusal (`X-Sluice-State`, the body's `state`) and
 * in `sluice_lane_state{lane,state}`. Pure: the lane and the time are arguments.
 */
import type { Lane } from "./lane.js";

export const WAIT_STATES = ["ok", "local_queue", "gateway_degraded"] as const;
export type WaitState = (typeof WAIT_STATES)[number];

export function waitState(lane: Lane, nowMs: number): WaitState {
  if (upstreamDegraded(lane, nowMs)) return "gateway_degraded";
  return lane.queue.size > 0 ? "local_queue" : "ok";
}

/** A pod of the lane tripped, paused or narrowed below its ceiling, or the lane's account paused. */
function upstreamDegraded(lane: Lane, nowMs: number): boolean {
  if (lane.account !== null && lane.account.quotaUntil > nowMs) return true;
  if (lane.pods === null) return false;
  for (const pod of lane.pods) {
    if (pod.breaker.state.kind !== "closed" || pod.quotaUntil > nowMs || pod.pausedUntil > nowMs) return true;
    if (pod.width.width < pod.ceiling) return true;
  }
  return false;
}
