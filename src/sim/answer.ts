/**
 * The exact bytes the sim answers a request with, computed from the request alone: what
 * `sluice load` checks every answer against, through sluice and straight to the pods alike. It
 * composes the same builders the sim's `Job` writes with (openai.ts), so the two cannot drift
 * apart without `test/sim/answer.test.ts` failing.
 */
import {
  answerTokenCount,
  completionBody,
  contentKey,
  embeddingBody,
  finishReasonFor,
  parseSimRequest,
  replyMeta,
  SSE_DONE,
  simTokens,
  streamChunk,
  usage,
  type WorkKind,
} from "./openai.js";

/** The options of the pods serving a model that shape their answers (every pod of a model alike). */
export interface AnswerOptions {
  /** Model named when the request names none. */
  model: string;
  defaultOutputTokens: number;
  embeddingDims: number;
}

/**
 * The full body (for a stream: every SSE event, `[DONE]` included) a 200 answer to `body` on a
 * `kind` route carries. Throws `SimBadRequestError` for a body the sim would answer 400.
 */
export function expectedAnswer(kind: WorkKind, body: Buffer | string, o: AnswerOptions): string {
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  if (kind === "echo") return `{"pages":1,"bytes":${bytes.length}}`;
  const p = parseSimRequest(kind, bytes, o.model);
  if (kind === "embedding")
    return embeddingBody(p.model, p.inputs, o.embeddingDims, p.promptTokens, p.encodingFormat);
  const n = answerTokenCount(p, o.defaultOutputTokens);
  const finish = finishReasonFor(n, o.defaultOutputTokens);
  const key = contentKey(p.model, p.promptText);
  const meta = replyMeta(kind, p.model, key);
  const tokens = simTokens(key, n);
  const u = usage(p.promptTokens, n);
  if (!p.stream) return completionBody(kind, meta, tokens.join(""), finish, u);
  const chat = kind === "chat";
  let out = chat ? streamChunk(kind, meta, { role: "assistant", content: "" }, null, p.includeUsage) : "";
  for (const t of tokens) out += streamChunk(kind, meta, chat ? { content: t } : t, null, p.includeUsage);
  out += streamChunk(kind, meta, chat ? {} : "", finish, p.includeUsage);
  out += streamChunk(kind, meta, null, null, p.includeUsage, u);
  return out + SSE_DONE;
}
