/**
 * A request's token estimate (issues 10 and 21): what its lane's and account's token budgets
 * (`tpm`) reserve at the grant — the prompt's tokens plus the most the answer may take
 * (`max_completion_tokens`, else `max_tokens`, else `max_output_tokens`, else the model's
 * `default_max_tokens`, so leaving them out cannot dodge a budget; times `n` when several choices
 * are asked for). Embeddings count their input only. The answer's `usage` replaces it at the end
 * (reconcile).
 *
 * The prompt is everything the provider bills as input, wherever the body puts it (messages,
 * tools, response_format, images, audio: {@link promptTokens}). Text is counted with a real
 * tokenizer, `gpt-tokenizer`'s `o200k_base`, the encoding of OpenAI's current models
 * (docs/config.md says why this package), over the first {@link TOKENIZED_CHARS} characters;
 * tokenizing is synchronous, and one huge body must not hold the event loop (64 K characters take
 * about 6 ms), so the rest is measured instead ({@link tailTokens}: CJK is not under-counted).
 */
import { createRequire } from "node:module";
import { audioTokens, fileTokens, IMAGE_TOKENS_DEFAULT, imageTokens } from "./estimate-media.js";

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

/** Characters of a request's text run through the tokenizer; the rest is counted by {@link tailTokens}. */
export const TOKENIZED_CHARS = 64 * 1024;
/** OpenAI's per-message overhead in a chat prompt (role and separators), in tokens. */
const PER_MESSAGE = 4;

/** The rough rule for text the tokenizer does not see: 4 characters per token. */
export const charsToTokens = (chars: number): number => Math.ceil(chars / 4);

/**
 * Tokens of text past {@link TOKENIZED_CHARS}, from its length in characters and UTF-8 bytes (both
 * cheap: `Buffer.byteLength` is native): ASCII at 4 characters a token, and 3/8 of a token for each
 * byte a character takes past its first, so a CJK character (3 bytes) counts 1 token — o200k_base
 * takes 0.68 (simplified) to 0.90 (traditional Chinese) tokens per CJK character, where bytes ÷ 4
 * would give 0.75 — and at least the tokens per character the tokenized head had.
 */
export function tailTokens(chars: number, bytes: number, headRatio: number): number {
  return Math.ceil(Math.max(chars * headRatio, chars / 4 + (3 * (bytes - chars)) / 8));
}

/**
 * Text of a request, added piece by piece: the first {@link TOKENIZED_CHARS} characters are
 * tokenized in one call at the end, the rest only measured ({@link tailTokens}).
 */
class TextCount {
  readonly #head: string[] = [];
  #headChars = 0;
  #tailChars = 0;
  #tailBytes = 0;

  add(text: string): void {
    const room = TOKENIZED_CHARS - this.#headChars;
    if (text.length <= room) {
      this.#head.push(text);
      this.#headChars += text.length;
      return;
    }
    if (room > 0) {
      this.#head.push(text.slice(0, room));
      this.#headChars = TOKENIZED_CHARS;
    }
    const tail = room > 0 ? text.slice(room) : text;
    this.#tailChars += tail.length;
    this.#tailBytes += Buffer.byteLength(tail, "utf8");
  }

  tokens(): number {
    if (this.#headChars === 0) return 0;
    const head = countTokens(this.#head.length === 1 ? this.#head[0]! : this.#head.join(""));
    if (this.#tailChars === 0) return head;
    return head + tailTokens(this.#tailChars, this.#tailBytes, head / this.#headChars);
  }
}

/** Tokens of `text`: the tokenizer over the first {@link TOKENIZED_CHARS} characters, {@link tailTokens} beyond. */
export function textTokens(text: string): number {
  const count = new TextCount();
  count.add(text);
  return count.tokens();
}

/** What media cost on a model (its `image_tokens`); see estimate-media.ts. */
export interface MediaCosts {
  readonly imageTokens: number;
}
const DEFAULT_COSTS: MediaCosts = { imageTokens: IMAGE_TOKENS_DEFAULT };

/** Top-level members that are settings of the call, not input the provider bills. */
const SETTINGS = new Set([
  "model",
  "stream",
  "stream_options",
  "max_tokens",
  "max_completion_tokens",
  "max_output_tokens",
  "n",
  "temperature",
  "top_p",
  "seed",
  "stop",
  "user",
  "metadata",
  "store",
  "service_tier",
  "logprobs",
  "top_logprobs",
  "logit_bias",
  "presence_penalty",
  "frequency_penalty",
  "parallel_tool_calls",
  "modalities",
  "reasoning_effort",
  "encoding_format",
  "dimensions",
]);
/** Members that name a kind (a role, a part's type, an image's detail), not text, when short. */
const LABELS = new Set(["role", "type", "detail", "format"]);
const LABEL_CHARS = 64;
/** Members holding media payloads (base64, data URLs): counted by their part's formula, not as text. */
const PAYLOADS = new Set(["url", "image_url", "data", "file_data"]);
/**
 * Members holding schemas and tool definitions, which providers render into the prompt whole:
 * their keys (property names) count as text, and so do their `type`s and `format`s.
 */
const SCHEMAS = new Set(["tools", "functions", "response_format", "text"]);
/** How a member's contents count: numbers as token ids; keys and every string as text. */
const TOKEN_IDS = 1;
const SCHEMA = 2;

/** A string that is a label or a media payload, not text (outside schemas). */
function skipped(key: string, value: string): boolean {
  if (LABELS.has(key)) return value.length <= LABEL_CHARS;
  return PAYLOADS.has(key) && (key === "data" || key === "file_data" || value.startsWith("data:"));
}

/** Members of the OpenAI-style bodies whose input is walked; a body with none counts its bytes ÷ 4. */
const INPUTS = ["messages", "prompt", "input", "instructions", "tools", "functions"];

/**
 * The prompt's tokens of an OpenAI-style body — everything a provider bills as input: every string
 * of `messages` (all content parts, `name`s, assistant `tool_calls` and their arguments,
 * `refusal`), `prompt`/`input` (token ids count one each), `instructions`, `tools` and `functions`
 * (names, descriptions, parameter schemas with their property names), `response_format`'s schema,
 * any other member that is not a setting ({@link SETTINGS}); 4 per message; images and audio by
 * their formulas (estimate-media.ts). Any other body counts its bytes ÷ 4.
 *
 * The walk is iterative (an explicit stack), so a deep body costs no call stack: its depth is
 * bounded by the JSON guard before it is parsed, and the sim's provider reuses this unguarded.
 */
export function promptTokens(
  body: Record<string, unknown>,
  bodyBytes: number,
  costs: MediaCosts = DEFAULT_COSTS,
): number {
  if (!INPUTS.some((k) => body[k] !== undefined)) return charsToTokens(bodyBytes);
  const text = new TextCount();
  let tokens = 0;
  // Parallel stacks: the value, the member it is (or is inside a list of), and how it counts
  // (TOKEN_IDS, SCHEMA: bits).
  const values: unknown[] = [];
  const keys: string[] = [];
  const kinds: number[] = [];
  const members = Object.keys(body);
  for (let i = members.length - 1; i >= 0; i--) {
    const k = members[i]!;
    if (SETTINGS.has(k)) continue;
    values.push(body[k]);
    keys.push(k);
    kinds.push(k === "prompt" || k === "input" ? TOKEN_IDS : SCHEMAS.has(k) ? SCHEMA : 0);
  }
  while (values.length > 0) {
    const value = values.pop();
    const key = keys.pop()!;
    const kind = kinds.pop()!;
    if (typeof value === "string") {
      if (kind !== SCHEMA && skipped(key, value)) continue;
      text.add(value);
    } else if (typeof value === "number") {
      if (kind === TOKEN_IDS) tokens++;
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) {
        values.push(value[i]);
        keys.push(key);
        kinds.push(kind);
      }
    } else if (value !== null && typeof value === "object") {
      const o = value as Record<string, unknown>;
      if (typeof o.role === "string") tokens += PER_MESSAGE;
      tokens += mediaTokens(o, costs);
      const inner = Object.keys(o);
      // A schema's property names are rendered into the prompt: they count as text.
      if (kind === SCHEMA) for (const k of inner) text.add(k);
      for (let i = inner.length - 1; i >= 0; i--) {
        values.push(o[inner[i]!]);
        keys.push(inner[i]!);
        kinds.push(kind);
      }
    }
  }
  return tokens + text.tokens();
}

/** The tokens of `o` when it is an image, audio or file part (0 otherwise); its payload is skipped as text. */
function mediaTokens(o: Record<string, unknown>, costs: MediaCosts): number {
  const type = o.type;
  if (o.image_url !== undefined || type === "image_url" || type === "input_image" || type === "image") {
    const image = o.image_url;
    const inner =
      image !== null && typeof image === "object" ? (image as Record<string, unknown>) : undefined;
    return imageTokens(inner !== undefined ? inner.url : image, inner?.detail ?? o.detail, costs.imageTokens);
  }
  const audio = o.input_audio;
  if (audio !== null && typeof audio === "object") {
    const a = audio as Record<string, unknown>;
    return audioTokens(a.data, a.format);
  }
  if (typeof o.file_data === "string") return fileTokens(o.file_data);
  return 0;
}

/** True for a request whose answer is not generated text (embeddings): its input is all it costs. */
export function inputOnly(path: string): boolean {
  return /^\/v1\/embeddings(?:[/?]|$)/.test(path);
}

/**
 * The estimate to reserve: prompt plus the answer's cap for each choice. `maxTokens` is the
 * request's output bound (validated by the parse phase), undefined when it names none; `choices`
 * its `n` (OpenAI bills each choice's output).
 */
export function estimateTokens(
  prompt: number,
  maxTokens: number | undefined,
  defaultMaxTokens: number,
  embeddings: boolean,
  choices = 1,
): number {
  return embeddings ? prompt : prompt + (maxTokens ?? defaultMaxTokens) * choices;
}
