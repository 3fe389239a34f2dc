/**
 * The sim's routes that do no work (`/health`, `/metrics`, `/v1/models`) and the 404/405 for
 * anything else: answered at once, never queued, never counted as received.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { sendJson } from "./job.js";
import { errorBody, SIM_CREATED_S } from "./openai.js";

/** Answers `path`; `metrics` renders the scrape when asked for. */
export function serveInfoRoute(
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
  model: string,
  metrics: () => string,
): void {
  if (path !== "/health" && path !== "/metrics" && path !== "/v1/models") {
    const message = `no route ${req.method} ${path}`;
    sendJson(res, 404, errorBody(message, "invalid_request_error", "not_found"));
    return;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    sendJson(res, 405, errorBody(`${req.method} ${path}: use GET`, "invalid_request_error"));
    return;
  }
  req.resume();
  if (path === "/health") {
    res.writeHead(200, { "content-length": 0 });
    res.end();
  } else if (path === "/metrics") {
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
    res.end(metrics());
  } else {
    const entry = { id: model, object: "model", created: SIM_CREATED_S, owned_by: "sluice-sim", root: model };
    sendJson(res, 200, JSON.stringify({ object: "list", data: [entry] }));
  }
}
