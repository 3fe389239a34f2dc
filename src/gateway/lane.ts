/**
 * The one place the gateway decides a call's lane (issue 23: the request path read in a
 * straight line). Two questions, each answered here and nowhere else:
 *
 * - **Which lane.** The model the route or `X-Sluice-Model` names (known before the body: the
 *   admit phase) or `body.model` names (the parse phase), resolved once by {@link nameLane} into
 *   what every later phase reads from the context: `ctx.model`, `ctx.shadow` (shadow mode) and
 *   `ctx.metered` (a token budget on its path: the estimate, a buffered body, the usage read).
 * - **Does the lane refuse the call now.** Asked of the Governor without counting anything, at
 *   the two moments the gateway can act on the answer: before the body
 *   ({@link refusalBeforeBody}: the gateway bound, then the lane when it is named, else the key
 *   — a refused upload is never read), and before a lease is asked for ({@link refusalBeforeGrant}:
 *   the lane with the call's token estimate, asked only when {@link mayGrantNow} says the lane
 *   cannot grant on arrival, or `tryAcquire` found it could not). The lane is asked again after
 *   the body because the body took time and carries the estimate; what it says then is the
 *   answer the wait phase throws.
 */
import type { ModelConfig } from "../config/schema.js";
import type { SluiceError } from "../core/errors.js";
import type { Priority } from "../core/priority.js";
import type { Governor } from "../governor/governor.js";
import type { GatewayParts, RequestContext } from "./context.js";
import { unknownModel } from "./http-error.js";

/** Where a lane's name came from: the `param` an `unknown_model` answer names. */
export type LaneSource = "route" | "header:x-sluice-model" | "body.model";

/**
 * Resolves `ctx.lane` to its configured model, once per call, and carries the result on the
 * context (`model`, `shadow`, `metered`); or throws 404 `unknown_model` naming where the name
 * came from.
 */
export function nameLane(ctx: RequestContext, gw: GatewayParts, source: LaneSource): ModelConfig {
  const model = ctx.lane === undefined ? undefined : gw.models.get(ctx.lane);
  if (model === undefined) throw unknownModel(ctx.lane ?? "", source);
  ctx.model = model;
  ctx.shadow = gw.shadows.get(model.name) ?? null;
  ctx.metered = gw.metered.has(model.name);
  return model;
}

/**
 * Before the body: the gateway's admission bound, then the lane when it is already named (its
 * check covers the key too), else the key's own bound; undefined when none refuses. Counts
 * nothing.
 */
export function refusalBeforeBody(ctx: RequestContext, gw: GatewayParts): SluiceError | undefined {
  const { governor } = gw;
  const bound = governor.admissionRefusal();
  if (bound !== undefined) return bound;
  const claim = ctx.claim!;
  if (ctx.model !== null) return governor.check(ctx.model.name, claim);
  return claim.key !== undefined ? governor.checkKey(claim.key) : undefined;
}

/**
 * Before a lease: the lane's refusal of the call with its token estimate (the claim parse
 * completed), or undefined when it would be granted or queued. Counts nothing.
 */
export function refusalBeforeGrant(ctx: RequestContext, gw: GatewayParts): SluiceError | undefined {
  return gw.governor.check(ctx.model!.name, ctx.claim!);
}

/**
 * Whether the call's lane may grant it on arrival (see {@link mayGrantNow}); a lane that cannot
 * is asked for its refusal before a lease is tried for.
 */
export function grantsOnArrival(ctx: RequestContext, gw: GatewayParts): boolean {
  return mayGrantNow(gw.governor.laneStatus(ctx.model!.name), ctx.claim!.priority);
}

/**
 * False when the lane can grant nobody of class `priority` on arrival: it is at its width, or
 * others wait ahead (only an interactive call may pass waiters, on the reserve). A guess that is
 * wrong only costs time: `acquire` still grants a call the lane turns out to have room for.
 */
export function mayGrantNow(status: LaneStatus | undefined, priority: Priority): boolean {
  if (status === undefined) return true; // a pass-through lane: always granted
  if (status.inflight >= status.width) return false;
  return status.queued === 0 || priority === "interactive";
}

type LaneStatus = NonNullable<ReturnType<Governor["laneStatus"]>>;
