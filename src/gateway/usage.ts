/**
 * Actual token usage from an upstream answer (DESIGN §3.1 step 7): the `usage` object of a JSON
 * body, or of the final SSE chunk of a stream. The proxy keeps only a bounded tail of the bytes it
 * forwards, so this costs no buffering of whole answers.
 */

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

  constructor(readonly sse: boolean) {}

  push(chunk: Buffer): void {
    this.bytes += chunk.length;
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

function read(u: unknown): TokenUsage | undefined {
  if (u === null || typeof u !== "object") return undefined;
  const o = u as Record<string, unknown>;
  const prompt = typeof o.prompt_tokens === "number" ? o.prompt_tokens : 0;
  const completion = typeof o.completion_tokens === "number" ? o.completion_tokens : 0;
  return { promptTokens: prompt, completionTokens: completion };
}

export function usageFromJson(text: string): TokenUsage | undefined {
  try {
    return read((JSON.parse(text) as Record<string, unknown>).usage);
  } catch {
    return undefined;
  }
}

export function usageFromSse(text: string): TokenUsage | undefined {
  const lines = text.split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (!line.startsWith("data:") || !line.includes('"usage"')) continue;
    try {
      const found = read((JSON.parse(line.slice(5).trim()) as Record<string, unknown>).usage);
      if (found !== undefined) return found;
    } catch {
      // a partial first line of the tail; keep looking
    }
  }
  return undefined;
}
