/**
 * Phase 1: who is calling. The caller (a configured key, or anonymous in open mode) or 401
 * `unauthorized`; the rules are in `auth.ts`, shared with the admin routes.
 */
import type { GatewayParts, RequestContext } from "../context.js";

export function authenticate(ctx: RequestContext, gw: GatewayParts): boolean {
  ctx.caller = gw.auth.authenticate(ctx.req);
  return true;
}
