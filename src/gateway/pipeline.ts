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
 * refusal. Every refusal, whichever phase made it, is sent by reply.ts's `refuse`.
 */
import type { GatewayParts, Phase, RequestContext } from "./context.js";
import { admit } from "./phases/admit.js";
import { authenticate } from "./phases/authenticate.js";
import { dispatch } from "./phases/dispatch.js";
import { parse } from "./phases/parse.js";
import { readBody } from "./phases/read-body.js";
import { settle } from "./phases/settle.js";
import { wait } from "./phases/wait.js";
import { refuse } from "./reply.js";

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
    // Sent by reply.ts, the one place a refusal is sent (and held, when the client storms).
    const ended = refuse(ctx, gw, error);
    if (ended !== false) await ended;
  } finally {
    settle(ctx, gw);
  }
}
