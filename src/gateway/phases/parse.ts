/**
 * Phase 4: take what admission needs from an OpenAI-style JSON body — `model`, `stream`,
 * `max_tokens`, and, only for a model with a token budget on its path (`metered.ts`), the token
 * estimate that budget reserves (`estimate.ts`) — and nothing else. The body is forwarded as
 * the bytes that arrived, never re-serialized. A body streamed through (lane known before it) is
 * not parsed.
 *
 * What bounds parsing is the body phase, not a permit count: Node's `JSON.parse` is synchronous,
 * so one body is parsed at a time by construction, and the bytes that can be waiting for it are
 * bounded by `max_body_bytes` per request and `max_buffered_bytes` for all of them.
 */
import { type GatewayParts, type RequestContext, resolveModel } from "../context.js";
import { estimateTokens, inputOnly, promptTokens } from "../estimate.js";
import { HttpError } from "../http-error.js";

export function parse(ctx: RequestContext, gw: GatewayParts): boolean {
  const body = ctx.body;
  if (body === null) return true; // streamed through: the lane was named before the body
  const parsed = parseRequestBody(body, ctx.req.headers["content-type"]);
  ctx.lane = parsed.model;
  const model = resolveModel(ctx, gw, "body.model");
  ctx.stream = parsed.stream;
  // Only a token budget reads the estimate (metered.ts); elsewhere the tokenizer is not run.
  if (!gw.metered.has(model.name)) return true;
  const prompt = promptTokens(parsed.body, body.length);
  ctx.promptTokens = prompt;
  ctx.tokens = estimateTokens(prompt, parsed.maxTokens, model.defaultMaxTokens, inputOnly(ctx.path));
  return true;
}

export interface ParsedRequest {
  model: string;
  stream: boolean;
  maxTokens: number | undefined;
  /** The parsed body, for the prompt's token count (`estimate.ts` `promptTokens`) where one is needed. */
  body: Record<string, unknown>;
}

export function parseRequestBody(body: Buffer, contentType: string | undefined): ParsedRequest {
  if (contentType === undefined || !/^application\/(.+\+)?json\b/i.test(contentType)) {
    throw new HttpError(
      415,
      "unsupported_media_type",
      `Content-Type must be application/json, got ${contentType === undefined ? "none" : `"${contentType}"`}`,
      "header:content-type",
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(body.toString("utf8"));
  } catch (error) {
    throw new HttpError(
      400,
      "bad_request",
      `the body is not valid JSON: ${(error as Error).message}`,
      "body",
    );
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new HttpError(400, "bad_request", "the body must be a JSON object", "body");
  }
  const o = value as Record<string, unknown>;
  if (typeof o.model !== "string" || o.model.length === 0) {
    throw new HttpError(
      400,
      "bad_request",
      "the body has no `model` (a non-empty string is required, or send X-Sluice-Model)",
      "body.model",
    );
  }
  if (o.stream !== undefined && typeof o.stream !== "boolean") {
    throw new HttpError(400, "bad_request", "`stream` must be true or false", "body.stream");
  }
  const maxTokens = o.max_completion_tokens ?? o.max_tokens;
  if (
    maxTokens !== undefined &&
    (typeof maxTokens !== "number" || !Number.isInteger(maxTokens) || maxTokens < 0)
  ) {
    throw new HttpError(400, "bad_request", "`max_tokens` must be a whole number ≥ 0", "body.max_tokens");
  }
  return {
    model: o.model,
    stream: o.stream === true,
    maxTokens: maxTokens as number | undefined,
    body: o,
  };
}
