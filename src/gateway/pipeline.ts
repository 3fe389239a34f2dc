/**
 * The request path as phases (STYLE G13, after fastify's lifecycle): each phase either hands the
 * request on or ends it, and nothing after the end runs. Settle runs after every request,
 * whichever phase ended it.
 *
 *   authenticate → admit (pre-body) → read body | stream through → parse → wait → dispatch → settle
 *
 * Admission runs before any `'data'` listener is attached, so a refused upload is never read.
 * Phases are plain functions: only a phase that waits (reading a body, queueing, the upstream
 * call) returns a promise, so a request granted on arrival pays for no promise per phase.
 * See docs/lifecycle.md for the tree of steps and each one's refusal status.
 *
 * A capacity refusal to a client that retried before its last Retry-After, while the loop is
 * saturated, is sent when that Retry-After ends, a second at most (pacing.ts); it is the same
 * refusal.
 */
import { isSluiceError } from "../core/errors.js";
import type { GatewayParts, Phase, RequestContext } from "./context.js";
import { HttpError } from "./http-error.js";
import { held, holdUntil } from "./pacing.js";
import { admit } from "./phases/admit.js";
import { authenticate } from "./phases/authenticate.js";
import { dispatch } from "./phases/dispatch.js";
import { parse } from "./phases/parse.js";
import { readBody } from "./phases/read-body.js";
import { settle } from "./phases/settle.js";
import { wait } from "./phases/wait.js";
import { sendError } from "./reply.js";

/** The phases in order; the last one sends the answer. */
export const PHASES: readonly Phase[] = [authenticate, admit, readBody, parse, wait, dispatch];

/**
 * Runs `ctx` through {@link PHASES}, stopping at the first that ends it. A phase that throws
 * ends it too: the error is the reply (a refusal or bad input; anything else is a logged 500).
 */
export async function runPhases(ctx: RequestContext, gw: GatewayParts): Promise<void> {
  try {
    for (let i = 0; i < PHASES.length; i++) {
      const next = PHASES[i]!(ctx, gw);
      if (next === true) continue;
      if (next === false || !(await next)) return;
    }
  } catch (error) {
    // The metrics count each refusal object once, whether the Governor reported it or not.
    if (error instanceof HttpError || isSluiceError(error)) ctx.refused = error;
    if (isSluiceError(error) && ctx.lease === undefined) {
      const until = holdUntil(ctx.req, ctx.started, performance.now());
      if (until > 0 && !(await held(ctx, gw, until))) return;
    }
    sendError(ctx.res, error, ctx.id, gw.log, gw.governor, ctx.lane, ctx.priority);
  } finally {
    settle(ctx, gw);
  }
}
