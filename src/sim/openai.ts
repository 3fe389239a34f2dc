/**
 * The OpenAI wire format as the simulator speaks it: parsing the three request bodies it
 * understands and building response bodies, stream chunks and error bodies. Pure functions, so
 * the load runner can compute the exact bytes a request should get back.
 */
import { fnv1a, mix32 } from "./random.js";

/** The routes that do work (hold a sequence slot). */
export type WorkKind = "chat" | "completion" | "embedding" | "echo";

/**
 * `created` in every body. Fixed, not the clock, so identical requests get identical bytes from
 * any pod of a model at any time.
 */
export const SIM_CREATED_S = 1_700_000_000;

/** What the simulator needs from a request body. */
export interface SimRequest {
  model: string;
  stream: boolean;
  /** `stream_options.include_usage` was true: every chunk then carries `"usage": null`, as OpenAI's do. */
  includeUsage: boolean;
  /** The prompt's text (message contents joined by "\n"), the key of the deterministic answer. */
  promptText: string;
  /** ceil(characters of prompt or message content / 4), the usual rough estimate. */
  promptTokens: number;
  /** `max_tokens` or `max_completion_tokens`, when the request names one. */
  maxTokens: number | undefined;
  /** Embedding inputs, one vector each. */
  inputs: string[];
  /**
   * `encoding_format` of an embedding request: `float` (JSON numbers) or `base64` (the float32
   * vector's little-endian bytes, base64 — the official SDKs ask for it by default and decode it).
   */
  encodingFormat: EncodingFormat;
}

/** How an embedding vector is written in the answer (OpenAI's `encoding_format`). */
export type EncodingFormat = "float" | "base64";

/** A request the simulator answers with 400, with OpenAI's `param` naming the bad field. */
export class SimBadRequestError extends Error {
  override readonly name = "SimBadRequestError";
  readonly httpStatus = 400;
  constructor(
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

/** Token usage as OpenAI reports it. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** Parses and checks a JSON body for `kind`; throws `SimBadRequestError`. */
export function parseSimRequest(
  kind: Exclude<WorkKind, "echo">,
  body: Buffer,
  fallbackModel: string,
): SimRequest {
  let json: unknown;
  try {
    json = JSON.parse(body.toString("utf8"));
  } catch (e) {
    throw new SimBadRequestError(`invalid JSON body (${body.length} bytes): ${(e as Error).message}`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new SimBadRequestError("the request body must be a JSON object");
  }
  const b = json as Record<string, unknown>;
  const model = typeof b.model === "string" && b.model !== "" ? b.model : fallbackModel;
  const maxTokens = b.max_tokens ?? b.max_completion_tokens;
  if (
    maxTokens !== undefined &&
    maxTokens !== null &&
    !(Number.isInteger(maxTokens) && (maxTokens as number) >= 1)
  ) {
    throw new SimBadRequestError(
      `max_tokens must be an integer ≥ 1, got ${JSON.stringify(maxTokens)}`,
      "max_tokens",
    );
  }
  const texts =
    kind === "chat" ? messageTexts(b.messages) : promptTexts(b, kind === "embedding" ? "input" : "prompt");
  let chars = 0;
  for (const t of texts) chars += t.length;
  const opts = b.stream_options as { include_usage?: unknown } | null | undefined;
  const format = b.encoding_format ?? "float";
  if (kind === "embedding" && format !== "float" && format !== "base64") {
    throw new SimBadRequestError(
      `encoding_format must be "float" or "base64", got ${JSON.stringify(format)}`,
      "encoding_format",
    );
  }
  return {
    model,
    stream: kind !== "embedding" && b.stream === true,
    includeUsage: opts?.include_usage === true,
    promptText: texts.join("\n"),
    promptTokens: Math.ceil(chars / 4),
    maxTokens: (maxTokens as number | null | undefined) ?? undefined,
    inputs: kind === "embedding" ? texts : [],
    encodingFormat: format as EncodingFormat,
  };
}

function messageTexts(messages: unknown): string[] {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new SimBadRequestError("messages must be a non-empty array", "messages");
  }
  const out: string[] = [];
  for (const m of messages) {
    const content = (m as { content?: unknown } | null)?.content;
    if (typeof content === "string") out.push(content);
    else if (Array.isArray(content)) {
      // Content parts: only text parts count towards the prompt.
      for (const part of content) if (typeof part?.text === "string") out.push(part.text);
    }
  }
  return out;
}

function promptTexts(b: Record<string, unknown>, field: "prompt" | "input"): string[] {
  const v = b[field];
  if (typeof v === "string") return [v];
  if (Array.isArray(v) && v.length > 0) {
    // Token-id arrays are legal too; their JSON stands in for text (≈ 4 characters a token).
    return v.map((x) => (typeof x === "string" ? x : JSON.stringify(x)));
  }
  throw new SimBadRequestError(`${field} must be a string or a non-empty array`, field);
}

/** The key of a deterministic answer: same model and prompt → same text, on any pod. */
export function contentKey(model: string, promptText: string): number {
  return fnv1a(promptText, fnv1a(`${model}\u0000`));
}

/** The `n` tokens of the answer to `key`; joined with "" they give the full text ("tok12 tok907 …"). */
export function simTokens(key: number, n: number): string[] {
  const out = new Array<string>(n);
  for (let i = 0; i < n; i++) out[i] = `${i === 0 ? "" : " "}tok${mix32(key + i) % 1000}`;
  return out;
}

/** The full answer text for `model` and `promptText` with `n` tokens. */
export function simText(model: string, promptText: string, n: number): string {
  return simTokens(contentKey(model, promptText), n).join("");
}

/** A deterministic embedding in [−1, 1] for one input. */
export function simEmbedding(model: string, input: string, dims: number): number[] {
  const key = contentKey(model, input);
  const v = new Array<number>(dims);
  for (let d = 0; d < dims; d++) v[d] = Math.round(((mix32(key + d) / 4294967296) * 2 - 1) * 1e6) / 1e6;
  return v;
}

/**
 * Tokens of the answer: the sim's `defaultOutputTokens`, cut to the request's `max_tokens` when
 * that is smaller (then `finish_reason` is `"length"`, see {@link finishReasonFor}).
 */
export function answerTokenCount(p: Pick<SimRequest, "maxTokens">, defaultOutputTokens: number): number {
  return p.maxTokens !== undefined && p.maxTokens < defaultOutputTokens ? p.maxTokens : defaultOutputTokens;
}

/** `"length"` when `max_tokens` cut the answer short of what the model would have said, else `"stop"`. */
export function finishReasonFor(n: number, defaultOutputTokens: number): "stop" | "length" {
  return n < defaultOutputTokens ? "length" : "stop";
}

/** Usage for a prompt estimate and a completion length. */
export function usage(promptTokens: number, completionTokens: number): Usage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
}

/** What every body and chunk of one answer shares. */
export interface ReplyMeta {
  id: string;
  created: number;
  model: string;
}

/** `chatcmpl-…` or `cmpl-…` id derived from the content key, so it is deterministic too. */
export function replyMeta(kind: "chat" | "completion", model: string, key: number): ReplyMeta {
  return {
    id: `${kind === "chat" ? "chatcmpl" : "cmpl"}-sim${key.toString(16)}`,
    created: SIM_CREATED_S,
    model,
  };
}

/** A complete (non-streaming) chat or text completion body. */
export function completionBody(
  kind: "chat" | "completion",
  meta: ReplyMeta,
  text: string,
  finishReason: string,
  u: Usage,
): string {
  const choice =
    kind === "chat"
      ? {
          index: 0,
          message: { role: "assistant", content: text },
          logprobs: null,
          finish_reason: finishReason,
        }
      : { index: 0, text, logprobs: null, finish_reason: finishReason };
  const object = kind === "chat" ? "chat.completion" : "text_completion";
  return JSON.stringify({
    id: meta.id,
    object,
    created: meta.created,
    model: meta.model,
    choices: [choice],
    usage: u,
  });
}

/**
 * One SSE event of a stream. `delta` is the chat delta or the completion text; `choices: []`
 * with `u` set is the final usage chunk.
 */
export function streamChunk(
  kind: "chat" | "completion",
  meta: ReplyMeta,
  delta: { role?: string; content?: string } | string | null,
  finishReason: string | null,
  includeUsage: boolean,
  u?: Usage,
): string {
  const object = kind === "chat" ? "chat.completion.chunk" : "text_completion";
  const choices =
    delta === null
      ? []
      : kind === "chat"
        ? [{ index: 0, delta, logprobs: null, finish_reason: finishReason }]
        : [{ index: 0, text: delta, logprobs: null, finish_reason: finishReason }];
  const chunk: Record<string, unknown> = {
    id: meta.id,
    object,
    created: meta.created,
    model: meta.model,
    choices,
  };
  if (u !== undefined) chunk.usage = u;
  else if (includeUsage) chunk.usage = null;
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/** The stream's terminator. */
export const SSE_DONE = "data: [DONE]\n\n";

/** An embeddings response for every input. */
export function embeddingBody(
  model: string,
  inputs: readonly string[],
  dims: number,
  promptTokens: number,
  format: EncodingFormat = "float",
): string {
  const data = inputs.map((input, index) => {
    const vector = simEmbedding(model, input, dims);
    return { object: "embedding", index, embedding: format === "base64" ? base64Vector(vector) : vector };
  });
  return JSON.stringify({
    object: "list",
    data,
    model,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  });
}

/** A vector as OpenAI's `base64` encoding writes it: float32 little-endian bytes, base64. */
export function base64Vector(vector: readonly number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes.toString("base64");
}

/** OpenAI's error body shape: `{"error":{"message","type","param","code"}}`. */
export function errorBody(
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null,
): string {
  return JSON.stringify({ error: { message, type, param, code } });
}
