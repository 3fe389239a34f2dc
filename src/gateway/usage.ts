/**
 * Actual token usage from an upstream answer (DESIGN §3.1 step 7): the `usage` object of a JSON
 * body, or of the final SSE chunk of a stream. The proxy keeps only a bounded tail of the bytes it
 * forwards, so this costs no buffering of whole answers.
 */

import type { Usage } from "../core/lease.js";
import { charsToTokens } from "./estimate.js";

/** Bytes of the answer kept for finding `usage`: JSON bodies up to this size, SSE tails of it. */
const TAIL_BYTES = 16 * 1024;

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

/** Collects the tail of a forwarded answer. */
export class UsageTap {
  #chunks: Buffer[] = [];
  #size = 0;
  /** Total bytes seen (for the log line). */
  bytes = 0;
  /**
   * Characters of generated text a stream carried (its `"content"` / `"text"` strings): what a
   * stream that reports no usage is reconciled with (÷ 4). Counted in bytes: a multi-byte
   * character counts more than once, which errs on the side of charging.
   */
  streamedChars = 0;

  constructor(readonly sse: boolean) {}

  push(chunk: Buffer): void {
    this.bytes += chunk.length;
    if (this.sse) this.streamedChars += generatedChars(chunk.toString("latin1"));
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    // Keep at most TAIL_BYTES plus the newest chunk.
    while (this.#size - this.#chunks[0]!.length >= TAIL_BYTES) this.#size -= this.#chunks.shift()!.length;
  }

  /** The usage found, or undefined. JSON answers larger than the tail are not parsed. */
  usage(): TokenUsage | undefined {
    if (this.#size === 0) return undefined;
    const text = Buffer.concat(this.#chunks, this.#size).toString("utf8");
    return this.sse ? usageFromSse(text) : this.bytes <= TAIL_BYTES ? usageFromJson(text) : undefined;
  }
}

/**
 * What a successful answer reports to its lease, to reconcile the token budgets (issue 10): the
 * answer's usage; a stream without one, its prompt estimate plus what it streamed (÷ 4); a JSON
 * answer without one, nothing (its estimate stays charged).
 */
export function settledUsage(
  usage: TokenUsage | undefined,
  tap: UsageTap,
  promptTokens: number,
): Usage | undefined {
  if (usage !== undefined)
    return { promptTokens: usage.promptTokens, completionTokens: usage.completionTokens };
  return tap.sse ? { promptTokens, completionTokens: charsToTokens(tap.streamedChars) } : undefined;
}

/**
 * Characters inside the `"content":"…"` and `"text":"…"` strings of SSE chunks. A string cut by a
 * chunk boundary counts up to the boundary; the rest of it is not counted (an estimate).
 */
export function generatedChars(text: string): number {
  let n = 0;
  for (const key of ['"content":"', '"text":"']) {
    for (let at = text.indexOf(key); at >= 0; at = text.indexOf(key, at)) {
      let i = at + key.length;
      while (i < text.length && text.charCodeAt(i) !== 34 /* " */)
        i += text.charCodeAt(i) === 92 /* \ */ ? 2 : 1;
      n += i - (at + key.length);
      at = i;
    }
  }
  return n;
}

/** Index of the `}` closing the object that opens at `open` (usage objects hold no strings with braces). */
function closingBrace(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 123 /* { */) depth++;
    else if (c === 125 /* } */ && --depth === 0) return i;
  }
  return -1;
}

function read(u: unknown): TokenUsage | undefined {
  if (u === null || typeof u !== "object") return undefined;
  const o = u as Record<string, unknown>;
  const prompt = typeof o.prompt_tokens === "number" ? o.prompt_tokens : 0;
  const completion = typeof o.completion_tokens === "number" ? o.completion_tokens : 0;
  return { promptTokens: prompt, completionTokens: completion };
}

/**
 * OpenAI puts `usage` last in a JSON answer; parse just that object instead of the whole body
 * (the body can be a long completion, and this runs on every answer).
 */
export function usageFromJson(text: string): TokenUsage | undefined {
  const at = text.lastIndexOf('"usage"');
  if (at < 0) return undefined;
  const open = text.indexOf("{", at);
  const close = open < 0 ? -1 : closingBrace(text, open);
  if (close < 0) return undefined;
  try {
    return read(JSON.parse(text.slice(open, close + 1)));
  } catch {
    return undefined;
  }
}

/** The last `"usage":{…}` object in a stream's tail (the final chunk carries it). */
export function usageFromSse(text: string): TokenUsage | undefined {
  let at = text.lastIndexOf('"usage":{');
  while (at >= 0) {
    const open = at + 8;
    const close = closingBrace(text, open);
    if (close > 0) {
      try {
        const found = read(JSON.parse(text.slice(open, close + 1)));
        if (found !== undefined) return found;
      } catch {
        // a cut-off object at the start of the tail; look further back
      }
    }
    at = at > 0 ? text.lastIndexOf('"usage":{', at - 1) : -1;
  }
  return undefined;
}
