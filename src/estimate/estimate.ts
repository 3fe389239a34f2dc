/**
 * A request's token estimate (issues 10 and 21): what its lane's and account's token budgets
 * (`tpm`) reserve at the grant — the prompt's tokens plus the most the answer may take
 * (`max_completion_tokens`, else `max_tokens`, else `max_output_tokens`, else the model's
 * `default_max_tokens`, so leaving them out cannot dodge a budget; times `n` when several choices
 * are asked for). Embeddings count their input only. The answer's `usage` replaces it at the end
 * (reconcile).
 *
 * The prompt is everything the provider bills as input, wherever the body puts it (messages,
 * tools, response_format, images, audio: {@link promptTokens}). Its text is counted by
 * text.ts: a real tokenizer over a bounded head, the rest measured.
 */
import { audioTokens, fileTokens, IMAGE_TOKENS_DEFAULT, imageTokens } from "./media.js";
import { TextCount } from "./text.js";

export {
  charsToTokens,
  loadTokenizer,
  TOKENIZED_CHARS,
  tailTokens,
  textTokens,
} from "./text.js";

/** OpenAI's per-message overhead in a chat prompt (role and separators), in tokens. */
const PER_MESSAGE = 4;

/** What media cost on a model (its `image_tokens`); see media.ts. */
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
 * The prompt's tokens of an OpenAI-style body as a provider bills them: every string counted by
 * the tokenizer (see {@link countPrompt} for what counts). What the simulators bill; the gateway
 * estimates with {@link estimatePromptTokens}, whose cost is bounded.
 */
export function promptTokens(
  body: Record<string, unknown>,
  bodyBytes: number,
  costs: MediaCosts = DEFAULT_COSTS,
): number {
  return countPrompt(body, bodyBytes, costs, new TextCount(false));
}

/**
 * The prompt's tokens of an OpenAI-style body for the estimate: as {@link promptTokens}, with the
 * text counted at a bounded cost (text.ts: a tokenized head and samples, the rest
 * measured).
 */
export function estimatePromptTokens(
  body: Record<string, unknown>,
  bodyBytes: number,
  costs: MediaCosts = DEFAULT_COSTS,
): number {
  return countPrompt(body, bodyBytes, costs, new TextCount());
}

/**
 * Everything a provider bills as input: every string
 * of `messages` (all content parts, `name`s, assistant `tool_calls` and their arguments,
 * `refusal`), `prompt`/`input` (token ids count one each), `instructions`, `tools` and `functions`
 * (names, descriptions, parameter schemas with their property names), `response_format`'s schema,
 * any other member that is not a setting ({@link SETTINGS}); 4 per message; images and audio by
 * their formulas (media.ts), the text by `text`. Any other body counts its bytes ÷ 4.
 *
 * The walk is iterative (an explicit stack), so a deep body costs no call stack: its depth is
 * bounded by the JSON guard before it is parsed, and the sim's provider reuses this unguarded.
 */
function countPrompt(
  body: Record<string, unknown>,
  bodyBytes: number,
  costs: MediaCosts,
  text: TextCount,
): number {
  if (!INPUTS.some((k) => body[k] !== undefined)) return Math.ceil(bodyBytes / 4);
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
