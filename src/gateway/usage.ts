/**
 * Actual token usage from an upstream answer (DESIGN §3.1 step 7): the `usage` object of a JSON
 * body of any size, or of a stream's chunk that carries one. Read as the bytes go by, without
 * buffering the answer: {@link UsageScanner} finds each `"usage"` key with a native search and
 * keeps only the bytes of its object (OpenAI puts `usage` last in a JSON answer, and in the final
 * chunk of a stream, so the last one found is the answer's).
 *
 * The reconcile never refunds on ignorance (issue 21): an answer whose usage was not found keeps
 * its estimate, except a stream, which is charged what it generated (`stream-usage.ts`).
 */

import type { Usage } from "../core/lease.js";
import { charsToTokens } from "../estimate/estimate.js";
import { generatedChars, StreamText } from "./stream-usage.js";

export { generatedChars };

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

const KEY = Buffer.from('"usage"');
const QUOTE = 0x22;
const COLON = 0x3a;
const OPEN = 0x7b;
const CLOSE = 0x7d;
/**
 * The most bytes of one `usage` object kept while it arrives: OpenAI's, with its token details,
 * is about 300. A longer one is not a usage object sluice can read, and is not kept.
 */
const MAX_USAGE_BYTES = 4096;

/** Where the scanner is in the bytes after a `"usage"` key. */
const SEEK = 0;
const AFTER_KEY = 1;
const BEFORE_VALUE = 2;
const IN_OBJECT = 3;

/**
 * Finds the last readable `"usage": {…}` object in bytes pushed in order, keeping only that
 * object's bytes. Per chunk it costs one native `indexOf`, plus a walk over a usage object's own
 * few hundred bytes when one is found. A `"usage"` inside a JSON string is written `\"usage\"`,
 * so generated text cannot fake one.
 */
export class UsageScanner {
  #state = SEEK;
  /** Brace depth inside the object being read. */
  #depth = 0;
  /** The object's bytes so far, when it spans chunks. */
  #parts: Buffer[] = [];
  #partBytes = 0;
  /** How many bytes of a `"usage"` key the last chunk ended with (a key cut by a chunk boundary). */
  #partial = 0;
  /**
   * What the usage objects found so far report, each field from the last object that names it:
   * Anthropic's stream reports the prompt in its first event and the output in its last.
   */
  #prompt: number | undefined = undefined;
  #completion: number | undefined = undefined;

  push(chunk: Buffer): void {
    let i = 0;
    const partial = this.#partial;
    this.#partial = 0;
    if (this.#state !== SEEK) i = this.#resume(chunk, 0);
    else if (partial > 0) {
      // A key cut by chunk boundaries: does this chunk go on with it (or hold only more of it)?
      const rest = KEY.length - partial;
      const n = Math.min(rest, chunk.length);
      if (chunk.compare(KEY, partial, partial + n, 0, n) === 0) {
        if (n < rest) {
          this.#partial = partial + n;
          return;
        }
        this.#state = AFTER_KEY;
        i = this.#resume(chunk, rest);
      }
    }
    while (i >= 0) {
      const at = chunk.indexOf(KEY, i);
      if (at < 0) {
        this.#partial = keyPrefixAtEnd(chunk);
        return;
      }
      this.#state = AFTER_KEY;
      i = this.#resume(chunk, at + KEY.length);
    }
  }

  /**
   * The usage found, or undefined. A report that names no prompt count takes `promptEstimate`
   * (never a refund on ignorance); one that names no output count reports none (an embedding).
   */
  usage(promptEstimate = 0): TokenUsage | undefined {
    if (this.#prompt === undefined && this.#completion === undefined) return undefined;
    return { promptTokens: this.#prompt ?? promptEstimate, completionTokens: this.#completion ?? 0 };
  }

  /**
   * Runs the state machine over `chunk` from `i`: the index to search on from, or -1 when the
   * chunk ended inside a key's value (the next chunk resumes it).
   */
  #resume(chunk: Buffer, i: number): number {
    const n = chunk.length;
    if (this.#state === AFTER_KEY) {
      while (i < n && isSpace(chunk[i]!)) i++;
      if (i === n) return -1;
      // `"usage"` as a value, not a key (`"object":"usage"`): look further.
      if (chunk[i] !== COLON) return this.#seek(i);
      this.#state = BEFORE_VALUE;
      i++;
    }
    if (this.#state === BEFORE_VALUE) {
      while (i < n && isSpace(chunk[i]!)) i++;
      if (i === n) return -1;
      if (chunk[i] !== OPEN) return this.#seek(i); // `null` (every chunk of a stream asked for usage)
      this.#state = IN_OBJECT;
      this.#depth = 0;
    }
    // IN_OBJECT: usage objects hold numbers and nested objects of numbers, no strings with braces.
    const start = i;
    for (; i < n; i++) {
      const c = chunk[i]!;
      if (c === OPEN) this.#depth++;
      else if (c === CLOSE && --this.#depth === 0) {
        this.#keep(chunk.subarray(start, i + 1), false);
        this.#read();
        return this.#seek(i + 1);
      }
    }
    this.#keep(chunk.subarray(start), true);
    return -1;
  }

  #seek(i: number): number {
    this.#state = SEEK;
    this.#parts = [];
    this.#partBytes = 0;
    return i;
  }

  /** Adds `bytes` to the object being read; `copy` when they are a slice of a chunk not kept. */
  #keep(bytes: Buffer, copy: boolean): void {
    if (this.#state !== IN_OBJECT) return;
    this.#partBytes += bytes.length;
    if (this.#partBytes > MAX_USAGE_BYTES) {
      this.#seek(0);
      return;
    }
    // An object that continues in the next chunk is copied: the chunk itself is not kept.
    this.#parts.push(copy ? Buffer.from(bytes) : bytes);
  }

  #read(): void {
    if (this.#state !== IN_OBJECT) return;
    const bytes = this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts);
    try {
      const report = readUsage(JSON.parse(bytes.toString("utf8")));
      if (report === undefined) return;
      if (report.promptTokens !== undefined) this.#prompt = report.promptTokens;
      if (report.completionTokens !== undefined) this.#completion = report.completionTokens;
    } catch {
      // not JSON after all: the last usage found stays
    }
  }
}

/** How many bytes at the end of `chunk` are the start of a `"usage"` key (0 for none). */
function keyPrefixAtEnd(chunk: Buffer): number {
  const from = Math.max(0, chunk.length - KEY.length + 1);
  for (let at = chunk.indexOf(QUOTE, from); at >= 0; at = chunk.indexOf(QUOTE, at + 1)) {
    const have = chunk.length - at;
    if (chunk.compare(KEY, 0, have, at, chunk.length) === 0) return have;
  }
  return 0;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

const count = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined;

/** The counts one usage object names (a field it does not name is undefined). */
export interface UsageReport {
  promptTokens?: number;
  completionTokens?: number;
}

/**
 * A usage object's token counts: chat and completions (`prompt_tokens`, `completion_tokens`),
 * the Responses and Anthropic APIs (`input_tokens`, `output_tokens`), or only a `total_tokens`
 * (counted as prompt). Undefined when it names none of them: an object sluice cannot read is not
 * a report of zero.
 */
export function readUsage(u: unknown): UsageReport | undefined {
  if (u === null || typeof u !== "object") return undefined;
  const o = u as Record<string, unknown>;
  const prompt = count(o.prompt_tokens) ?? count(o.input_tokens);
  const completion = count(o.completion_tokens) ?? count(o.output_tokens);
  if (prompt !== undefined || completion !== undefined) {
    const report: UsageReport = {};
    if (prompt !== undefined) report.promptTokens = prompt;
    if (completion !== undefined) report.completionTokens = completion;
    return report;
  }
  const total = count(o.total_tokens);
  return total === undefined ? undefined : { promptTokens: total };
}

/** What {@link UsageTap} does besides finding usage. */
export interface TapOptions {
  /**
   * Count the generated text of a stream (every metered stream: it is what a stream without
   * usage is charged). **Default:** true for a stream.
   */
  count?: boolean;
  /**
   * Remove the usage sluice asked for on the client's behalf (`stream_options.include_usage`
   * added by `stream-options.ts`) from what the client receives. **Default:** false.
   */
  strip?: boolean;
}

/** What one forwarded answer carries: its usage, its size and, for a metered stream, its generated text. */
export class UsageTap {
  /** Total bytes of the pod's answer (for the log line). */
  bytes = 0;
  readonly #scanner = new UsageScanner();
  readonly #text: StreamText | null;

  constructor(
    readonly sse: boolean,
    options: TapOptions = {},
  ) {
    const strip = sse && options.strip === true;
    this.#text = sse && (options.count ?? true) ? new StreamText(strip) : null;
  }

  /** Takes the next chunk of the pod's answer; returns what the client is sent for it (maybe empty). */
  push(chunk: Buffer): Buffer {
    this.bytes += chunk.length;
    this.#scanner.push(chunk);
    return this.#text === null ? chunk : this.#text.push(chunk);
  }

  /** At the answer's end: what is still held back (an unterminated last event), or null. */
  end(): Buffer | null {
    return this.#text?.end() ?? null;
  }

  /** The usage found, or undefined; a report without a prompt count takes `promptEstimate`. */
  usage(promptEstimate = 0): TokenUsage | undefined {
    return this.#scanner.usage(promptEstimate);
  }

  /**
   * Characters of generated text the stream carried; undefined when it was not counted or its
   * shape was not recognised (no text found at all, or an event too long to frame).
   */
  get streamedChars(): number | undefined {
    return this.#text?.generated();
  }
}

/**
 * What a successful answer reports to its lease, to reconcile the token budgets (issues 10 and
 * 21): the answer's usage; a stream without one, its prompt estimate plus what it generated (÷ 4);
 * anything else without one — a JSON answer, a stream whose text sluice did not recognise —
 * nothing, so its estimate stays charged.
 */
export function settledUsage(
  usage: TokenUsage | undefined,
  tap: UsageTap,
  promptTokens: number,
): Usage | undefined {
  if (usage !== undefined)
    return { promptTokens: usage.promptTokens, completionTokens: usage.completionTokens };
  const chars = tap.streamedChars;
  return chars === undefined ? undefined : { promptTokens, completionTokens: charsToTokens(chars) };
}

/** The last readable usage object in `text` (a whole JSON answer or a stream's bytes). */
export function usageIn(text: string): TokenUsage | undefined {
  const scanner = new UsageScanner();
  scanner.push(Buffer.from(text));
  return scanner.usage();
}
