/**
 * What the billing provider (billing-provider.ts) bills and says, as pure functions: the prompt
 * it counts over ALL the input of a chat body, the text it generates, and the OpenAI-shaped
 * bytes it answers with (a JSON body, or SSE chunks with `usage` only when
 * `stream_options.include_usage` asked for it, `tool_calls` and `reasoning_content` deltas).
 *
 * The billing rule, stated once (the invariant test reads it from here):
 * - prompt = o200k_base tokens of every message's text (a string, or its `text` parts), plus 3 per
 *   message and 3 to prime the reply (OpenAI's published chat overhead), plus the tokens of
 *   `JSON.stringify(tools)` (and `functions`), plus those of `JSON.stringify(response_format)`,
 *   plus each image by OpenAI's vision formula ({@link imageTokens});
 * - completion = o200k_base tokens of everything generated: the content, the reasoning, and
 *   each tool call's name and arguments.
 *
 * The real gpt-tokenizer is the gateway's own dependency; nothing here asks the gateway how it
 * counts.
 */
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";

/** OpenAI's chat overhead: tokens per message, and for priming the assistant's reply. */
export const PER_MESSAGE = 3;
export const REPLY_PRIMING = 3;

/**
 * Generated words: each is four characters with its leading space and exactly one o200k token
 * (checked by the test at start), so "characters ÷ 4" and the tokenizer agree on generated
 * content — a gateway that counts streamed text either way reconciles to what was billed.
 */
export const WORDS =
  " the and for you can not was are but all one new has any may use how its our out day get her him his who did let put say she too way yes".split(
    /(?= )/,
  );

/** A PNG's width and height from its IHDR (bytes 16–23), or undefined for anything else. */
export function pngSize(bytes: Buffer): { w: number; h: number } | undefined {
  if (bytes.length < 24 || bytes.readUInt32BE(0) !== 0x89504e47) return undefined;
  return { w: bytes.readUInt32BE(16), h: bytes.readUInt32BE(20) };
}

/**
 * OpenAI's vision cost for one image (gpt-4o family): `detail: "low"` is 85 tokens; otherwise the
 * image is fit within 2048 × 2048, then scaled so its shortest side is at most 768, and costs 85
 * plus 170 for each 512 × 512 tile it covers. An image whose size cannot be read costs as
 * 1024 × 1024 (765).
 */
export function imageTokens(size: { w: number; h: number } | undefined, detail: unknown): number {
  if (detail === "low") return 85;
  let { w, h } = size ?? { w: 1024, h: 1024 };
  const fit = Math.min(1, 2048 / Math.max(w, h));
  w *= fit;
  h *= fit;
  const short = Math.min(1, 768 / Math.min(w, h));
  w *= short;
  h *= short;
  return 85 + 170 * Math.ceil(w / 512) * Math.ceil(h / 512);
}

/** Tokens of one `image_url` part: the PNG size from a data URL, else the 1024 × 1024 default. */
function imagePartTokens(part: Record<string, unknown>): number {
  const image = part.image_url as { url?: unknown; detail?: unknown } | undefined;
  const url = typeof image?.url === "string" ? image.url : "";
  const comma = url.indexOf(",");
  const size =
    url.startsWith("data:") && comma > 0 ? pngSize(Buffer.from(url.slice(comma + 1), "base64")) : undefined;
  return imageTokens(size, image?.detail);
}

/** Prompt tokens of a chat body, by the rule in this file's header. */
export function billPrompt(body: Record<string, unknown>): number {
  let n = REPLY_PRIMING;
  const messages = Array.isArray(body.messages) ? body.messages : [];
  for (const m of messages as Record<string, unknown>[]) {
    n += PER_MESSAGE;
    const content = m?.content;
    if (typeof content === "string") n += countTokens(content);
    else if (Array.isArray(content)) {
      for (const part of content as Record<string, unknown>[]) {
        if (typeof part?.text === "string") n += countTokens(part.text);
        else if (part?.type === "image_url") n += imagePartTokens(part);
      }
    }
  }
  for (const key of ["tools", "functions", "response_format"] as const)
    if (body[key] !== undefined) n += countTokens(JSON.stringify(body[key]));
  return n;
}

/** What the client asked the provider to generate (test headers; a real model decides itself). */
export type OutputKind = "text" | "tools" | "reasoning";

/** The pieces of one answer, in order: each is a delta the stream sends (16 words at most). */
export interface Generated {
  reasoning: string[];
  content: string[];
  /** Argument fragments of one tool call (its name is {@link TOOL_NAME}). */
  toolArgs: string[];
}

export const TOOL_NAME = "lookup";

/** `words` words of answer for call `seed`, shaped as `kind` asks, cut into stream deltas. */
export function generate(kind: OutputKind, words: number, seed: number): Generated {
  const out: Generated = { reasoning: [], content: [], toolArgs: [] };
  let state = seed >>> 0 || 1;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return WORDS[(state >>> 8) % WORDS.length]!;
  };
  const pieces = (n: number): string[] => {
    const list: string[] = [];
    for (let left = n; left > 0; left -= 16) {
      let s = "";
      for (let i = 0; i < Math.min(16, left); i++) s += next();
      list.push(s);
    }
    return list;
  };
  if (kind === "tools") out.toolArgs = ['{"q":"', ...pieces(words), '"}'];
  else if (kind === "reasoning") {
    const thought = Math.ceil(words / 2);
    out.reasoning = pieces(thought);
    out.content = pieces(words - thought);
  } else out.content = pieces(words);
  return out;
}

/** Completion tokens of what was generated up to `upTo` pieces (all of them by default). */
export function billCompletion(g: Generated, upTo = Number.POSITIVE_INFINITY): number {
  let n = 0;
  let left = upTo;
  for (const list of [g.reasoning, g.content]) {
    for (const p of list) {
      if (left-- <= 0) return n;
      n += countTokens(p);
    }
  }
  if (g.toolArgs.length > 0) {
    // The name is generated with the first fragment.
    if (left <= 0) return n;
    n += countTokens(TOOL_NAME);
    for (const p of g.toolArgs) {
      if (left-- <= 0) return n;
      n += countTokens(p);
    }
  }
  return n;
}

/** The deltas of a stream, in order (role first, as OpenAI sends it). */
export function streamDeltas(g: Generated, callId: string): Record<string, unknown>[] {
  const deltas: Record<string, unknown>[] = [];
  for (const p of g.reasoning) deltas.push({ reasoning_content: p });
  for (const p of g.content) deltas.push({ content: p });
  g.toolArgs.forEach((p, i) => {
    deltas.push({
      tool_calls: [
        i === 0
          ? { index: 0, id: `call_${callId}`, type: "function", function: { name: TOOL_NAME, arguments: p } }
          : { index: 0, function: { arguments: p } },
      ],
    });
  });
  if (deltas.length > 0) deltas[0] = { role: "assistant", ...deltas[0] };
  return deltas;
}

export interface UsageBody {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  completion_tokens_details: { reasoning_tokens: number };
}

export function usageBody(prompt: number, completion: number, reasoning: number): UsageBody {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    completion_tokens_details: { reasoning_tokens: reasoning },
  };
}

/** One SSE event: `data: {chunk}\n\n`; `usage: null` on every chunk when the client asked for usage. */
export function sseChunk(
  id: string,
  model: string,
  choices: unknown[],
  includeUsage: boolean,
  usage?: UsageBody,
): string {
  const chunk: Record<string, unknown> = {
    id: `chatcmpl-${id}`,
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model,
    choices,
  };
  if (usage !== undefined) chunk.usage = usage;
  else if (includeUsage) chunk.usage = null;
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/**
 * A complete JSON answer. With `logprobs`, each generated piece carries OpenAI's per-token
 * logprob record, which is what makes real answers of a few hundred tokens larger than 16 KiB.
 */
export function jsonAnswer(
  id: string,
  model: string,
  g: Generated,
  logprobs: boolean,
  usage: UsageBody,
): string {
  const content = g.content.join("");
  const message: Record<string, unknown> = { role: "assistant", content: content === "" ? null : content };
  if (g.reasoning.length > 0) message.reasoning_content = g.reasoning.join("");
  if (g.toolArgs.length > 0)
    message.tool_calls = [
      { id: `call_${id}`, type: "function", function: { name: TOOL_NAME, arguments: g.toolArgs.join("") } },
    ];
  const records = logprobs
    ? {
        content: g.content.flatMap((p) =>
          p.split(/(?= )/).map((token) => ({
            token,
            logprob: -0.0123,
            bytes: [...Buffer.from(token)],
            top_logprobs: [],
          })),
        ),
      }
    : null;
  return JSON.stringify({
    id: `chatcmpl-${id}`,
    object: "chat.completion",
    created: 1_700_000_000,
    model,
    choices: [
      {
        index: 0,
        message,
        logprobs: records,
        finish_reason: g.toolArgs.length > 0 ? "tool_calls" : "stop",
      },
    ],
    usage,
  });
}
