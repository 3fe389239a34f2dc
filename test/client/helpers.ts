/**
 * What the client tests measure at the gateway: every request that arrives (when, and how it was
 * answered), from the gateway's own server events, so nothing is counted on the client's word.
 */
import type { Stack } from "../gateway/helpers.js";

export interface Arrival {
  /** `performance.now()` when the request's headers arrived at the gateway. */
  at: number;
  /** The status it was answered with; undefined until the answer ended. */
  status: number | undefined;
  /** When the answer ended. */
  endedAt: number | undefined;
}

/** Records every request the gateway receives from now on; `stop()` detaches. */
export function recordArrivals(stack: Stack): { arrivals: Arrival[]; stop(): void } {
  const arrivals: Arrival[] = [];
  const onRequest = (_req: unknown, res: import("node:http").ServerResponse) => {
    const a: Arrival = { at: performance.now(), status: undefined, endedAt: undefined };
    arrivals.push(a);
    res.once("finish", () => {
      a.status = res.statusCode;
      a.endedAt = performance.now();
    });
  };
  stack.gateway.server.on("request", onRequest);
  return { arrivals, stop: () => stack.gateway.server.off("request", onRequest) };
}

/** A JSON chat body for `model`. */
export function chatInit(model: string, content = "hello", extra: RequestInit = {}): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content }] }),
    ...extra,
  };
}

/** The most arrivals in any `spanMs`-long stretch of `times` (sorted ascending). */
export function peakIn(times: readonly number[], spanMs: number): number {
  let peak = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    while (times[end]! - times[start]! >= spanMs) start++;
    peak = Math.max(peak, end - start + 1);
  }
  return peak;
}
