/**
 * Phase 7, run after whichever phase ended the request (or threw): give back everything the
 * request held, each exactly once — the lease (a no-op when dispatch already reported the
 * outcome), the gateway bound, the buffered bytes — then count it and write one log line.
 */
import type { GatewayParts, RequestContext } from "../context.js";
import { HttpError } from "../http-error.js";

export function settle(ctx: RequestContext, gw: GatewayParts): void {
  const { res, lease, result, refused } = ctx;
  res.off("close", ctx.onClose);
  lease?.release();
  if (ctx.admitted) gw.governor.leave();
  gw.buffers.used -= ctx.bodyBytes;

  const seconds = (performance.now() - ctx.started) / 1000;
  const { metrics } = gw;
  // Only configured names become label values: a client must not be able to mint series.
  const lane = ctx.lane !== undefined && gw.models.has(ctx.lane) ? ctx.lane : undefined;
  if (refused !== undefined) metrics.refusal(refused instanceof HttpError ? refused.code : refused);
  if (result?.overloadStatus !== undefined && lease?.pod)
    metrics.upstreamOverload(lease.pod, result.overloadStatus);
  if (result?.usage && lane !== undefined) {
    metrics.tokens(lane, "prompt", result.usage.promptTokens);
    metrics.tokens(lane, "completion", result.usage.completionTokens);
  }
  metrics.request(lane ?? "-", res.statusCode, seconds);
  if (!gw.log.isLevelEnabled("info")) return;
  gw.log.info(
    {
      request_id: ctx.id,
      key: ctx.caller?.id,
      lane: ctx.lane,
      // The class the call ran as (after the key's cap); the class asked for when it never ran.
      priority: lease?.priority ?? ctx.priority,
      waiting_for_model_capacity_ms: lease ? Math.round(lease.queuedMs) : 0,
      pod: lease?.pod,
      status: res.statusCode,
      reason: refused?.code,
      prompt_tokens: result?.usage?.promptTokens,
      completion_tokens: result?.usage?.completionTokens,
      bytes: result?.bytes ?? 0,
      client_gone: result?.clientGone || undefined,
      ms: Math.round(seconds * 1000),
    },
    "request",
  );
}
