/**
 * A lane's `fallback` model (DESIGN §1.3), for a call no pod of its lane could start
 * (`redispatch.ts`): a lease on the fallback lane through the wait phase's own queued acquire
 * (`queuedLease`: the same queue, queue timeout and refusal as a call that named that model),
 * and the body that lane's pods get, under the fallback's own model name (`model-name.ts`). A
 * chain of fallbacks is followed once per lane; shadow mode never falls back.
 */
import type { Lease } from "../core/lease.js";
import type { GatewayParts, RequestContext } from "./context.js";
import { withModelName } from "./model-name.js";
import { queuedLease } from "./phases/wait.js";

/**
 * A lease on `lane`'s fallback model, or null when it has none, it was already tried (`tried`:
 * the lanes the call has been on), the call runs in shadow mode, or the client left while it was
 * waited for. A refusal there is thrown: it is the call's answer.
 */
export function fallbackLease(
  ctx: RequestContext,
  gw: GatewayParts,
  lane: string,
  tried: ReadonlySet<string>,
): Promise<Lease | null> {
  const name = gw.models.get(lane)?.fallback;
  if (name === undefined || ctx.shadow !== null || tried.has(name)) return Promise.resolve(null);
  return queuedLease(ctx, gw, name);
}

/**
 * The body a lane's pods are sent: the call's own on the lane it asked for, and with the lane's
 * model name on a lane reached as a fallback (here, or by the Governor at acquire); null (a body
 * streamed through) stays null.
 */
export function bodyFor(ctx: RequestContext, body: Buffer | null, lane: string): Buffer | null {
  return body === null || lane === ctx.model!.name ? body : withModelName(body, lane);
}
