/**
 * The retry policy of a call upstream: which answers prove that a pod never started it, and where
 * a call that never started goes next ({@link redispatch}).
 *
 * Which answers prove that a pod never started a call (issue 21, DESIGN §3.1 "re-dispatch needs
 * evidence"). By default none does: behind an ingress or a proxy, a 502 or 504 can come after the
 * pod took the call, so a call answered with any status is never sent to another pod — only one
 * whose connection failed before the request was written is (`attempt-error.ts`). A pod whose
 * operator knows it is a bare server that refuses without running (vLLM's or sluice's own
 * simulator's 503) lists those statuses in `pods[].redispatch_statuses`.
 */
import type { ModelConfig } from "../config/schema.js";
import type { Lease } from "../core/lease.js";
import type { FailureInput } from "../core/outcome.js";
import type { GatewayParts, RequestContext } from "./context.js";
import { fallbackLease } from "./fallback.js";

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

/** What a re-dispatch reads and sets on the call it moves (`phases/dispatch.ts`). */
export interface Redispatched {
  readonly ctx: RequestContext;
  readonly gw: GatewayParts;
  /** The lease the call runs on. */
  readonly lease: Lease;
  /** The lanes the call has been on (a fallback chain is followed once per lane). */
  readonly lanes: ReadonlySet<string>;
  /** The client left. */
  readonly clientGone: boolean;
  /** Set while the lease waits for another pod: the client leaving then gives the wait up. */
  waiting: boolean;
}

/**
 * Moves a call whose buffered body its pod never started (DESIGN §1.3): to another pod of its
 * lane — `lease.retry`, the Governor's re-dispatch within the per-call attempt limit and the
 * lane's re-dispatch budget, keeping the call's arrival — else to its lane's fallback model
 * (`fallback.ts`, through the wait phase's acquire). Resolves the lease to send the call on (the
 * same lease on another pod, or the fallback's), or null when the client left or there is nowhere
 * to go (the lease has then ended with `failure`). A refusal on the fallback lane rejects: it is
 * the call's answer.
 */
export async function redispatch(call: Redispatched, failure: FailureInput): Promise<Lease | null> {
  const { lease } = call;
  call.waiting = true;
  const again = await lease.retry(failure).catch(() => false);
  call.waiting = false;
  if (again) return lease;
  if (call.clientGone) return null;
  return fallbackLease(call.ctx, call.gw, lease.lane, call.lanes);
}
