/**
 * Which answers prove that a pod never started a call (issue 21, DESIGN §3.1 "re-dispatch needs
 * evidence"). By default none does: behind an ingress or a proxy, a 502 or 504 can come after the
 * pod took the call, so a call answered with any status is never sent to another pod — only one
 * whose connection failed before the request was written is (`attempt-error.ts`). A pod whose
 * operator knows it is a bare server that refuses without running (vLLM's or sluice's own
 * simulator's 503) lists those statuses in `pods[].redispatch_statuses`.
 */
import type { ModelConfig } from "../config/schema.js";

/** The statuses `redispatch_statuses` may list: a pod's overload (5xx) or throttling (429). */
export function mayMeanNotStarted(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

/**
 * True when `pod` of `model` lists `status` as "not started". Looked up only for an answer whose
 * status could be listed, so a 200 costs one comparison.
 */
export function redispatchable(model: ModelConfig | undefined, pod: string, status: number): boolean {
  if (!mayMeanNotStarted(status) || model === undefined) return false;
  for (const p of model.pods) if (p.url === pod) return p.redispatchStatuses?.includes(status) ?? false;
  return false;
}
