/**
 * Tokens of a request's text, for the estimate (estimate.ts), at a bounded cost. The tokenizer is
 * `gpt-tokenizer`'s `o200k_base`, the encoding of OpenAI's current models (docs/config.md says why
 * this package). It is synchronous, so what it may cost one request is bounded — and its cost is
 * not linear in the text: a pre-token (a run of letters with no space or punctuation) costs the
 * square of its length (16 K × "a" took 322 ms, 4 K random CJK characters 298 ms, on the loaded
 * 2-core test machine), and a CJK or Cyrillic character ~20 × an ASCII one.
 *
 * So: the first {@link TOKENIZED_CHARS} characters are tokenized, fewer when they are not ASCII
 * (a non-ASCII character weighs {@link NON_ASCII_WEIGHT}), in pieces whose runs without a space
 * are at most {@link RUN_CHARS} long; the rest is measured, not tokenized ({@link tailTokens}), at
 * the highest tokens per character of the head and of samples of the rest. At most 768 ASCII
 * characters are tokenized per request (~70 µs).
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

/**
 * Characters of a request's text tokenized from its start (ASCII; see {@link NON_ASCII_WEIGHT}).
 * The bound was 64 K characters: ~6 ms a call, 2.8 × the CPU per answer of a lane without `tpm`
 * for a 100 KB prompt and 1.7 × for 1 KB (bench:gateway e), and seconds for hostile text; the
 * tokenizer costs ~90 µs per KB of English, about what sluice spends on the whole answer.
 */
export const TOKENIZED_CHARS = 256;
/**
 * Characters of each sample tokenized past the head: at the end of the rest, and at its middle
 * when it is long; the rest counts at the highest tokens per character seen (head or samples),
 * so a long document after a short English instruction is not counted at English's ratio. A rest
 * no longer than one sample is tokenized whole.
 */
const SAMPLE_CHARS = 256;
/** What a non-ASCII character weighs against those bounds: ~20 × an ASCII one's cost. */
const NON_ASCII_WEIGHT = 16;
/** The longest run without whitespace tokenized in one piece (the tokenizer is quadratic in it). */
const RUN_CHARS = 64;
const LONG_RUN = new RegExp(`\\S{${RUN_CHARS + 1},}`, "g");
/** The rough rule for text the tokenizer does not see: 4 characters per token. */
export const charsToTokens = (chars: number): number => Math.ceil(chars / 4);

/**
 * Tokens of text that is not tokenized, from its length in characters and UTF-8 bytes (both
 * cheap: `Buffer.byteLength` is native): ASCII at 4 characters a token, and 3/8 of a token for each
 * byte a character takes past its first, so a CJK character (3 bytes) counts 1 token — o200k_base
 * takes 0.68 (simplified) to 0.90 (traditional Chinese) tokens per CJK character, where bytes ÷ 4
 * would give 0.75 — and at least the tokens per character the tokenized head had.
 */
export function tailTokens(chars: number, bytes: number, headRatio: number): number {
  return Math.ceil(Math.max(chars * headRatio, chars / 4 + (3 * (bytes - chars)) / 8));
}

/**
 * Text of a request, added piece by piece: its head (up to {@link TOKENIZED_CHARS} characters,
 * weighed) is tokenized at the end; the rest is measured ({@link tailTokens}) at the highest
 * tokens per character of the head and of samples of it.
 */
export class TextCount {
  /**
   * @param bounded false counts every character with the tokenizer, in one call — what a provider
   *   bills (the simulators' count), at a cost this module exists to avoid on the request path.
   */
  constructor(private readonly bounded = true) {}

  readonly #head: string[] = [];
  #headChars = 0;
  /** The text past the head, in order (references to the body's strings, not copies). */
  readonly #tail: string[] = [];
  #tailChars = 0;
  #tailBytes = 0;

  add(text: string): void {
    if (!this.bounded) {
      this.#head.push(text);
      return;
    }
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
    this.#measure(room > 0 ? text.slice(room) : text, false);
  }

  #measure(text: string, first: boolean): void {
    if (first) this.#tail.unshift(text);
    else this.#tail.push(text);
    this.#tailChars += text.length;
    this.#tailBytes += Buffer.byteLength(text, "utf8");
  }

  tokens(): number {
    if (!this.bounded) return this.#head.length === 0 ? 0 : countTokens(this.#head.join(""));
    if (this.#headChars === 0) return 0;
    const head = this.#head.length === 1 ? this.#head[0]! : this.#head.join("");
    const cut = weighedCut(head, TOKENIZED_CHARS);
    if (cut < head.length) this.#measure(head.slice(cut), true);
    const tokenized = countInPieces(cut < head.length ? head.slice(0, cut) : head);
    if (this.#tailChars === 0) return tokenized;
    const rest = this.#tailChars;
    if (rest <= SAMPLE_CHARS && this.#tailBytes === rest)
      return tokenized + countInPieces(this.#tail.join(""));
    let ratio = tokenized / cut;
    const samples = rest > 4 * SAMPLE_CHARS ? [rest >> 1, rest - SAMPLE_CHARS] : [rest - SAMPLE_CHARS];
    for (const at of samples) {
      const sample = this.#sampleAt(Math.max(0, at));
      const n = weighedCut(sample, SAMPLE_CHARS);
      if (n > 0) ratio = Math.max(ratio, countInPieces(sample.slice(0, n)) / n);
    }
    return tokenized + tailTokens(this.#tailChars, this.#tailBytes, ratio);
  }

  /** Up to {@link SAMPLE_CHARS} characters of the rest from character `at` (within one of its strings). */
  #sampleAt(at: number): string {
    let offset = at;
    for (const text of this.#tail) {
      if (offset < text.length) return text.slice(offset, offset + SAMPLE_CHARS);
      offset -= text.length;
    }
    return "";
  }
}

/** Where the characters of `text` weigh more than `bound` (its length if never; at least 1). */
function weighedCut(text: string, bound: number): number {
  let weight = 0;
  for (let i = 0; i < text.length; i++) {
    weight += text.charCodeAt(i) < 0x80 ? 1 : NON_ASCII_WEIGHT;
    if (weight > bound) return Math.max(1, i);
  }
  return text.length;
}

/**
 * The tokenizer over `text`, with every run of more than {@link RUN_CHARS} characters without a
 * space counted in pieces of that length: a merge across a cut is lost (at most one more token
 * per piece), and no piece costs more than a short word's square.
 */
function countInPieces(text: string): number {
  let total = 0;
  let at = 0;
  for (const run of text.matchAll(LONG_RUN)) {
    if (run.index > at) total += countTokens(text.slice(at, run.index));
    const end = run.index + run[0].length;
    for (let i = run.index; i < end; i += RUN_CHARS)
      total += countTokens(text.slice(i, Math.min(i + RUN_CHARS, end)));
    at = end;
  }
  return at === 0 ? countTokens(text) : total + (at < text.length ? countTokens(text.slice(at)) : 0);
}

/** Tokens of `text`: the tokenizer over a bounded head, {@link tailTokens} beyond. */
export function textTokens(text: string): number {
  const count = new TextCount();
  count.add(text);
  return count.tokens();
}
