/**
 * Phase 4 (DESIGN §3.1): take what admission needs from an OpenAI-style JSON body — `model`,
 * `stream`, `max_tokens`, and an estimate of prompt tokens — and nothing else. The body is
 * forwarded as the bytes that arrived, never re-serialized.
 *
 * `parse_permits` bounds how many bodies are parsed at once. In one Node process `JSON.parse` is
 * synchronous, so one parse runs at a time by construction and the permit count is a bound on
 * work queued for parsing, not on threads.
 */
import { HttpError } from "../http-error.js";

export interface ParsedRequest {
  model: string;
  stream: boolean;
  maxTokens: number | undefined;
  /** Rough prompt size: bytes ÷ 4, the usual rule of thumb for English text and code. */
  promptTokensEstimate: number;
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
    promptTokensEstimate: Math.ceil(body.length / 4),
  };
}
