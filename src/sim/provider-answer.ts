/**
 * What the provider simulator (provider.ts) makes of a request and what it answers, as pure
 * functions: how it reads a body, counts its prompt (a real tokenizer, as a hosted provider
 * does), how long the answer is, what the call is charged, and the exact body of its 200 answer.
 * The provider writes with these functions, and `sluice load` computes with the same ones the
 * bytes every answer must carry (`expectedProviderAnswer`), so the two cannot drift apart
 * without `test/sim/provider-answer.test.ts` failing.
 */
import { promptTokens } from "../estimate/estimate.js";
import {
  completionBody,
  contentKey,
  embeddingBody,
  parseSimRequest,
  replyMeta,
  SimBadRequestError,
  type SimRequest,
  SSE_DONE,
  simTokens,
  streamChunk,
  usage,
  type WorkKind,
} from "./openai.js";

/** The routes a provider answers. */
export type ProviderKind = Exclude<WorkKind, "echo">;

/** The default {@link ProviderAnswerOptions.maxOutputTokens}: a current model's completion limit. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 65_536;

/** Embedding length of the provider's vectors. */
export const PROVIDER_EMBEDDING_DIMS = 8;

/** The provider options its answers depend on (every one has the provider's default when absent). */
export interface ProviderAnswerOptions {
  /** Model name when the request names none. **Default:** `"provider-model"`. */
  model?: string;
  /** Output tokens when the request names no `max_tokens`. **Default:** `64`. */
  defaultOutputTokens?: number;
  /** An answer's length is `ceil(max_tokens × completionRatio)` (at least 1). **Default:** `1`. */
  completionRatio?: number;
  /**
   * The most completion tokens the model may generate: a larger `max_tokens` is answered 400, as
   * OpenAI's are ("This model supports at most N completion tokens"). Without it an absurd
   * `max_tokens` made the provider build an answer of that length (1e9 tokens ran a test out of
   * memory). **Default:** `65536`.
   */
  maxOutputTokens?: number;
  /** `usage` in a stream's last chunk: `"asked"` only with `stream_options.include_usage` (OpenAI), `"always"`, `"never"`. **Default:** `"asked"`. */
  streamUsage?: "asked" | "always" | "never";
}

/** A request as the provider reads it: the parsed body, the answer's length and the call's charge. */
export interface ProviderCall {
  request: SimRequest;
  /** Output tokens of the answer (0 for embeddings). */
  outputTokens: number;
  /** Tokens the account is charged: the prompt (tokenizer) + the output. */
  charge: number;
}

/**
 * Reads `body` as the provider does: the sim's parser, then the prompt counted with the gateway's
 * tokenizer. Throws `SimBadRequestError` for a body the provider answers 400.
 */
export function readProviderCall(kind: ProviderKind, body: Buffer, o: ProviderAnswerOptions): ProviderCall {
  const request = parseSimRequest(kind, body, o.model ?? "provider-model");
  request.promptTokens = promptTokens(
    JSON.parse(body.toString("utf8")) as Record<string, unknown>,
    body.length,
  );
  const max = request.maxTokens;
  const most = o.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
  if (kind !== "embedding" && max !== undefined && max > most) {
    throw new SimBadRequestError(
      `max_tokens is too large: ${max}. This model supports at most ${most} completion tokens, whereas you provided ${max}.`,
      "max_tokens",
    );
  }
  const outputTokens =
    kind === "embedding"
      ? 0
      : Math.max(
          1,
          Math.ceil(
            (max ?? o.defaultOutputTokens ?? 64) * (max === undefined ? 1 : (o.completionRatio ?? 1)),
          ),
        );
  return { request, outputTokens, charge: request.promptTokens + outputTokens };
}

/** The full body of the 200 answer to `call` (for a stream: every SSE event through `[DONE]`). */
export function providerAnswerBody(kind: ProviderKind, call: ProviderCall, o: ProviderAnswerOptions): string {
  const p = call.request;
  if (kind === "embedding")
    return embeddingBody(p.model, p.inputs, PROVIDER_EMBEDDING_DIMS, p.promptTokens, p.encodingFormat);
  const n = call.outputTokens;
  const key = contentKey(p.model, p.promptText);
  const meta = replyMeta(kind, p.model, key);
  const u = usage(p.promptTokens, n);
  const finish = p.maxTokens !== undefined && n >= p.maxTokens ? "length" : "stop";
  if (!p.stream) return completionBody(kind, meta, simTokens(key, n).join(""), finish, u);
  const mode = o.streamUsage ?? "asked";
  const withUsage = mode === "always" || (mode === "asked" && p.includeUsage);
  const chat = kind === "chat";
  let out = streamChunk(kind, meta, chat ? { role: "assistant", content: "" } : "", null, p.includeUsage);
  for (const piece of simTokens(key, n))
    out += streamChunk(kind, meta, chat ? { content: piece } : piece, null, p.includeUsage);
  out += streamChunk(kind, meta, chat ? {} : "", finish, p.includeUsage);
  if (withUsage) out += streamChunk(kind, meta, null, null, true, u);
  return out + SSE_DONE;
}

/** The exact bytes a provider with options `o` answers `body` with on a `kind` route (200). */
export function expectedProviderAnswer(
  kind: ProviderKind,
  body: Buffer | string,
  o: ProviderAnswerOptions,
): string {
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  return providerAnswerBody(kind, readProviderCall(kind, bytes, o), o);
}
