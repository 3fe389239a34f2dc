/**
 * Phase 4: take what admission needs from a buffered body — `model`, `stream`, the output bound,
 * and, only for a model with a token budget on its path (`metered.ts`), the token estimate that
 * budget reserves (`estimate.ts`, at a bounded cost) — and nothing else. The body is forwarded as the bytes that
 * arrived, never re-serialized. A body streamed through (read-body.ts says when) is not parsed.
 *
 * Where the lane was named decides what is read (issue 21):
 * - by the body: `JSON.parse`, `body.model` is the lane;
 * - by `X-Sluice-Model`: a JSON body's own `model`, when it has one, must be the same, else 400
 *   naming both — the lane counted must be the model the pod runs. Off a token budget the
 *   model is the one the JSON guard read while the body arrived, without `JSON.parse`;
 * - by a route: the body is an API of its own; it is read only for a token budget's estimate.
 * A body that is not JSON on a token budget's path is estimated from its size (bytes ÷ 4).
 *
 * What bounds parsing is the body phase: `max_body_bytes`, `max_buffered_bytes`, and the JSON
 * guard's `max_json_depth` / `max_json_values`, checked before `JSON.parse` sees the body.
 */
import type { ModelConfig } from "../../config/schema.js";
import { charsToTokens, estimatePromptTokens, estimateTokens, inputOnly } from "../../estimate/estimate.js";
import type { GatewayParts, RequestContext } from "../context.js";
import { HttpError } from "../http-error.js";
import { nameLane } from "../lane.js";
import { isJsonType } from "./read-body.js";

export function parse(ctx: RequestContext, gw: GatewayParts): boolean {
  const body = ctx.body;
  if (body === null) return true; // streamed through: the lane was named before the body
  const named = ctx.model;
  if (named === null) {
    const parsed = parseRequestBody(body, ctx.req.headers["content-type"]);
    ctx.lane = parsed.model;
    return read(ctx, nameLane(ctx, gw, "body.model"), parsed);
  }
  const metered = ctx.metered;
  if (ctx.routed !== undefined) {
    if (metered) read(ctx, named, ctx.json === null ? null : routeBody(body));
    return true;
  }
  // Named by X-Sluice-Model.
  if (ctx.json === null) return read(ctx, named, null); // not JSON: read only when metered
  const top = ctx.json.topModel;
  if (!metered && top.kind !== "unsure") {
    if (top.kind === "string") sameModel(named, top.value);
    return true;
  }
  const parsed = parseRequestBody(body, ctx.req.headers["content-type"], false);
  if (parsed.model !== undefined) sameModel(named, parsed.model);
  return read(ctx, named, parsed);
}

/**
 * Sets the stream flag and, on a token budget's path, the estimate (from the bytes when not
 * JSON), added to the claim every later check and grant takes.
 */
function read(ctx: RequestContext, model: ModelConfig, parsed: ParsedRequest | null): true {
  if (parsed !== null) ctx.stream = parsed.stream;
  // Only a token budget reads the estimate (metered.ts); elsewhere the tokenizer is not run.
  if (!ctx.metered) return true;
  const bytes = ctx.body!.length;
  const prompt =
    parsed === null
      ? charsToTokens(bytes)
      : estimatePromptTokens(parsed.body, bytes, { imageTokens: model.imageTokens });
  ctx.promptTokens = prompt;
  ctx.tokens = estimateTokens(
    prompt,
    parsed?.maxTokens,
    model.defaultMaxTokens + reasoningTokens(model, parsed?.reasoningEffort),
    inputOnly(ctx.path),
    parsed?.choices ?? 1,
  );
  if (ctx.tokens !== 0) ctx.claim = { ...ctx.claim!, tokens: ctx.tokens };
  return true;
}

/**
 * What a request's reasoning effort adds to the output it may take when it names no bound
 * (`models[].reasoning_tokens`): the effort's own figure, or the largest configured for an effort
 * the config does not list (an unknown effort must not reserve less). A request that names
 * `max_completion_tokens` has bounded its reasoning already, and `maxTokens` wins over this.
 */
function reasoningTokens(model: ModelConfig, effort: string | undefined): number {
  const table = model.reasoningTokens;
  if (effort === undefined || table === undefined) return 0;
  return table[effort] ?? Math.max(0, ...Object.values(table));
}

/** A route's JSON body, parsed for its estimate; null (counted by its bytes) when it is not an object. */
function routeBody(body: Buffer): ParsedRequest | null {
  try {
    return parseRequestBody(body, "application/json", false);
  } catch {
    return null;
  }
}

/** 400: the lane named by `X-Sluice-Model` is not the model the body asks for. */
export class ModelMismatchError extends HttpError {
  constructor(
    readonly headerModel: string,
    readonly bodyModel: string,
  ) {
    super(
      400,
      "bad_request",
      `X-Sluice-Model names "${headerModel}" but body.model names "${bodyModel}": a call is counted on ` +
        "the lane of the model it runs, so send one of them, or the same name in both",
      "header:x-sluice-model,body.model",
    );
  }
}

function sameModel(named: ModelConfig, bodyModel: string): void {
  if (bodyModel !== named.name) throw new ModelMismatchError(named.name, bodyModel);
}

export interface ParsedRequest {
  /** `body.model`; undefined only when it was not required (the lane was named by a header). */
  model: string | undefined;
  stream: boolean;
  /** The output bound: `max_completion_tokens`, else `max_tokens`, else `max_output_tokens`. */
  maxTokens: number | undefined;
  /** `n`: choices asked for, each bounded by `maxTokens`. */
  choices: number;
  /** `reasoning_effort`, or the Responses API's `reasoning.effort`, when the body names one. */
  reasoningEffort: string | undefined;
  /** The parsed body, for the prompt's token count (`estimate.ts` `promptTokens`) where one is needed. */
  body: Record<string, unknown>;
}

/** The output bounds a body may name, in the order they are read (the first one set wins). */
const OUTPUT_BOUNDS = ["max_completion_tokens", "max_tokens", "max_output_tokens"] as const;

export function parseRequestBody(
  body: Buffer,
  contentType: string | undefined,
  modelRequired = true,
): ParsedRequest {
  if (!isJsonType(contentType)) {
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
  const model = o.model;
  if (modelRequired || model !== undefined) {
    if (typeof model !== "string" || model.length === 0) {
      throw new HttpError(
        400,
        "bad_request",
        "the body has no `model` (a non-empty string is required, or send X-Sluice-Model)",
        "body.model",
      );
    }
  }
  if (o.stream !== undefined && o.stream !== null && typeof o.stream !== "boolean") {
    throw new HttpError(400, "bad_request", "`stream` must be true or false", "body.stream");
  }
  let maxTokens: number | undefined;
  for (const key of OUTPUT_BOUNDS) {
    const v = o[key];
    if (v === undefined || v === null) continue;
    if (!wholeNumber(v, 0))
      throw new HttpError(400, "bad_request", `\`${key}\` must be a whole number ≥ 0`, `body.${key}`);
    maxTokens = v;
    break;
  }
  const n = o.n ?? 1;
  if (!wholeNumber(n, 1)) throw new HttpError(400, "bad_request", "`n` must be a whole number ≥ 1", "body.n");
  const reasoning = o.reasoning as { effort?: unknown } | null | undefined;
  const effort = o.reasoning_effort ?? (typeof reasoning === "object" ? reasoning?.effort : undefined);
  return {
    model: model as string | undefined,
    stream: o.stream === true,
    maxTokens,
    choices: n,
    reasoningEffort: typeof effort === "string" ? effort : undefined,
    body: o,
  };
}

function wholeNumber(v: unknown, min: number): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= min;
}
