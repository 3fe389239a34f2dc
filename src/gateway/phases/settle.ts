/**
 * Phase 7, run after whichever phase ended the request (or threw): give back everything the
 * request held, each exactly once — the lease (a no-op when dispatch already reported the
 * outcome), the gateway bound, the buffered bytes — then count it and write one log line.
 *
 * The log line is `info`, or `warn` when an upstream attempt failed or the call ended in an
 * upstream or gateway error: a dead pod is never silent. A refusal's line is `debug`; at `info`
 * refusals are counted into one `"refusals"` line a second instead (refusal-log.ts). It names the lane that served the call
 * (on fallback, the fallback; `fallback_from` the lane asked for), the method and the path
 * (without its query, which may carry a credential), the body bytes actually sent, and every
 * failed upstream attempt with its detail — the detail the client's answer never carries.
 */
import { isSluiceError } from "../../core/errors.js";
import type { RequestOutcome } from "../../metrics/names.js";
import type { GatewayParts, RequestContext } from "../context.js";
import { CountedResponse } from "../counted-response.js";
import { HttpError } from "../http-error.js";
import { countRefusal } from "../refusal-log.js";

export function settle(ctx: RequestContext, gw: GatewayParts): void {
  const { res, lease, result, refused, failures } = ctx;
  res.off("close", ctx.onClose);
  lease?.release();
  if (ctx.admitted) gw.governor.leave();
  gw.buffers.used -= ctx.bodyBytes;

  const seconds = (performance.now() - ctx.started) / 1000;
  const { metrics } = gw;
  // Only configured names become label values: a client must not be able to mint series.
  const asked = ctx.lane !== undefined && gw.models.has(ctx.lane) ? ctx.lane : undefined;
  // The lane that served the call: the fallback when the lane asked for sent it there.
  const lane = lease?.lane ?? asked;
  const outcome = outcomeOf(ctx);
  if (refused !== undefined) metrics.refusal(refused instanceof HttpError ? refused.code : refused, lane);
  // Each failed attempt under the pod that failed it (after a re-dispatch, `lease.pod` is another).
  if (failures !== null) {
    for (const f of failures) {
      metrics.upstreamFailure(f.pod, f.cause);
      if (f.cause === "status" && f.status !== undefined) metrics.upstreamOverload(f.pod, f.status);
    }
  }
  if (result?.ttfbMs !== undefined && lane !== undefined) metrics.upstreamTtfb(lane, result.ttfbMs);
  if (result?.usage && lane !== undefined) {
    metrics.tokens(lane, "prompt", result.usage.promptTokens);
    metrics.tokens(lane, "completion", result.usage.completionTokens);
  }
  metrics.request({ lane, key: ctx.caller?.id, status: res.statusCode, outcome, seconds });

  let level: "warn" | "info" | "debug" =
    failures !== null || outcome === "upstream_error" || outcome === "internal_error" ? "warn" : "info";
  if (outcome === "refused" && level === "info") {
    // Refusals come by the thousand under overload: at info they are counted (refusal-log.ts).
    if (!gw.log.isLevelEnabled("debug")) {
      if (gw.log.isLevelEnabled("info"))
        countRefusal(gw.log, lane, refused!.code, ctx.caller?.id, res.statusCode);
      return;
    }
    level = "debug";
  }
  if (!gw.log.isLevelEnabled(level)) return;
  gw.log[level](
    {
      request_id: ctx.id,
      key: ctx.caller?.id,
      method: ctx.req.method,
      path: pathOnly(ctx.path),
      lane: lease?.lane ?? ctx.lane,
      fallback_from: lease !== undefined && ctx.lane !== lease.lane ? ctx.lane : undefined,
      // The class the call ran as (after the key's cap); the class asked for when it never ran.
      priority: lease?.priority ?? ctx.priority,
      waiting_for_model_capacity_ms: lease ? Math.round(lease.queuedMs) : 0,
      pod: lease?.pod,
      status: res.statusCode,
      outcome,
      reason: refused?.code,
      failures: failures ?? undefined,
      prompt_tokens: result?.usage?.promptTokens,
      completion_tokens: result?.usage?.completionTokens,
      bytes: res instanceof CountedResponse ? res.bodyBytes : (result?.bytes ?? 0),
      client_gone: ctx.clientGone || result?.clientGone || undefined,
      client_stalled: result?.clientStalled || undefined,
      ms: Math.round(seconds * 1000),
    },
    "request",
  );
}

/**
 * How the request ended, for the `outcome` label (the set and its order are documented at
 * `REQUEST_OUTCOMES` in src/metrics/names.ts and in docs/metrics.md).
 */
export function outcomeOf(
  ctx: Pick<RequestContext, "clientGone" | "refused" | "result" | "res">,
): RequestOutcome {
  const { refused, result } = ctx;
  if (ctx.clientGone || result?.clientGone) return "client_gone";
  if (refused !== undefined) {
    if (isSluiceError(refused) || refused.code === "draining") return "refused";
    return refused.status < 500 ? "client_error" : "internal_error";
  }
  const status = ctx.res.statusCode;
  if (result === undefined) return status < 500 ? "client_error" : "internal_error";
  // An error after the head (the answer cut short) or before it (502/504 from the gateway).
  if (result.error !== undefined || status === 429 || status >= 500) return "upstream_error";
  return status >= 400 ? "client_error" : "ok";
}

/** The path without its query string: a query may carry a credential (`?key=…`). */
function pathOnly(path: string): string {
  const q = path.indexOf("?");
  return q < 0 ? path : path.slice(0, q);
}
