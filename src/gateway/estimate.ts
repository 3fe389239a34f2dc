/**
 * A request's token estimate (issue 10): what its lane's and account's token budgets (`tpm`)
 * reserve at the grant — the prompt's tokens plus the most the answer may take
 * (`max_completion_tokens`, else `max_tokens`, else the model's `default_max_tokens`, so leaving
 * them out cannot dodge a budget). Embeddings count their input only. The answer's `usage`
 * replaces it at the end (reconcile).
 *
 * Prompt tokens come from a real tokenizer for OpenAI-style bodies (chat `messages`, completion
 * `prompt`, embedding `input`): `gpt-tokenizer`'s `o200k_base`, the encoding of OpenAI's current
 * models (docs/config.md says why this package). Text past {@link TOKENIZED_CHARS} characters, and
 * any other body, counts characters ÷ 4: tokenizing is synchronous, and one huge body must not
 * hold the event loop (64 K characters take about 6 ms).
 */
import { createRequire } from "node:module";

type CountTokens = (text: string) => number;
let tokenizer: CountTokens | undefined;

/**
 * Loads the tokenizer now if it is not loaded yet. Loading it costs about 0.6 s of CPU and tens of
 * MB (it builds the encoding's ranks), which a gateway without a `tpm` never needs: the gateway
 * calls this at start and on a reload when some model is metered, so no request pays for it.
 */
export function loadTokenizer(): CountTokens {
  tokenizer ??= (
    createRequire(import.meta.url)("gpt-tokenizer/encoding/o200k_base") as { countTokens: CountTokens }
  ).countTokens;
  return tokenizer;
}

const countTokens = (text: string): number => (tokenizer ?? loadTokenizer())(text);

/** Characters of a request's text run through the tokenizer; the rest count characters ÷ 4. */
export const TOKENIZED_CHARS = 64 * 1024;
/** OpenAI's per-message overhead in a chat prompt (role and separators), in tokens. */
const PER_MESSAGE = 4;

/** The rough rule for text the tokenizer does not see: 4 characters per token. */
export const charsToTokens = (chars: number): number => Math.ceil(chars / 4);

/** Tokens of `text`: the tokenizer over the first {@link TOKENIZED_CHARS} characters, ÷ 4 beyond. */
export function textTokens(text: string): number {
  if (text.length === 0) return 0;
  if (text.length <= TOKENIZED_CHARS) return countTokens(text);
  return countTokens(text.slice(0, TOKENIZED_CHARS)) + charsToTokens(text.length - TOKENIZED_CHARS);
}

/** The text of a chat message's `content`: a string, or the `text` parts of a list. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let text = "";
  for (const part of content)
    if (part !== null && typeof part === "object" && typeof (part as { text?: unknown }).text === "string")
      text += (part as { text: string }).text;
  return text;
}

/** A prompt or input: a string, a list of strings, or token ids (counted as they are). */
function inputTokens(input: unknown): number {
  if (typeof input === "string") return textTokens(input);
  if (!Array.isArray(input)) return 0;
  if (input.every((x) => typeof x === "number")) return input.length;
  let n = 0;
  for (const item of input) n += inputTokens(item);
  return n;
}

/** The prompt's tokens of an OpenAI-style body; characters ÷ 4 of the whole body for any other. */
export function promptTokens(body: Record<string, unknown>, bodyBytes: number): number {
  if (Array.isArray(body.messages)) {
    let text = "";
    for (const m of body.messages) {
      if (m !== null && typeof m === "object") text += contentText((m as { content?: unknown }).content);
    }
    return textTokens(text) + PER_MESSAGE * body.messages.length;
  }
  if (body.prompt !== undefined) return inputTokens(body.prompt);
  if (body.input !== undefined) return inputTokens(body.input);
  return charsToTokens(bodyBytes);
}

/** True for a request whose answer is not generated text (embeddings): its input is all it costs. */
export function inputOnly(path: string): boolean {
  return /^\/v1\/embeddings(?:[/?]|$)/.test(path);
}

/**
 * The estimate to reserve: prompt plus the answer's cap. `maxTokens` is the request's
 * `max_completion_tokens` / `max_tokens` (validated by the parse phase), undefined when it names
 * neither.
 */
export function estimateTokens(
  prompt: number,
  maxTokens: number | undefined,
  defaultMaxTokens: number,
  embeddings: boolean,
): number {
  return embeddings ? prompt : prompt + (maxTokens ?? defaultMaxTokens);
}
