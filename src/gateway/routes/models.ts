/**
 * `GET /v1/models` and `GET /v1/models/{id}`, answered by sluice itself: the configured models
 * in the OpenAI list shape, so an SDK's `models.list()` / `models.retrieve(id)` works through the
 * gateway (they got 415 before: the call went down the model-call path, which wants a JSON body).
 * The models are the gateway's lanes, not what each pod serves; behind the same auth as `/v1`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ModelConfig } from "../../config/schema.js";
import { HttpError, sendJson, unknownModel } from "../http-error.js";

const PREFIX = "/v1/models";

/** One entry of the list, as OpenAI's `Model` object. */
interface ModelObject {
  id: string;
  object: "model";
  /** Unix seconds: when this gateway first served the model (start, or the reload that added it). */
  created: number;
  owned_by: "sluice";
}

/** True for `/v1/models` and `/v1/models/{id}` (the path already resolved). */
export function isModelsPath(path: string): boolean {
  return path === PREFIX || path.startsWith(`${PREFIX}/`);
}

/**
 * Answers a models request; `created` gives each model's first-served time. Throws `HttpError`
 * (405 for a method other than GET/HEAD, 404 `unknown_model` for an id not configured).
 */
export function serveModels(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  models: ReadonlyMap<string, ModelConfig>,
  created: (model: string) => number,
): void {
  if (req.method !== "GET" && req.method !== "HEAD") {
    throw new HttpError(405, "method_not_allowed", `${req.method} is not allowed on ${PREFIX}; use GET`);
  }
  const object = (name: string): ModelObject => ({
    id: name,
    object: "model",
    created: created(name),
    owned_by: "sluice",
  });
  const rest = path.slice(PREFIX.length + 1);
  if (rest.length === 0) {
    sendJson(res, 200, { object: "list", data: [...models.keys()].map(object) });
    return;
  }
  let id: string;
  try {
    id = decodeURIComponent(rest);
  } catch {
    id = rest;
  }
  if (!models.has(id)) throw unknownModel(id, "path");
  sendJson(res, 200, object(id));
}
