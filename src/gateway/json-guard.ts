/**
 * The bounded parse (issue 21): a linear byte scan of a JSON request body, fed chunk by chunk
 * while the body is buffered, that refuses it — at the chunk that crosses a limit, before the rest
 * is read — when it nests deeper than `admission.max_json_depth` or holds more JSON values than
 * `admission.max_json_values`. `JSON.parse` is synchronous and builds the whole tree, so what it
 * costs (time on the one event loop, memory) grows with the number of values, not the bytes: a
 * 20 MiB body of nested arrays took 4.2 s and 1 GB. Past this guard, `JSON.parse` sees at most
 * `max_json_values` values `max_json_depth` deep, and the token count walks at most as deep.
 *
 * The scan does not validate JSON (`JSON.parse` does, where the body is parsed); it keeps only
 * the state it needs — the open containers (one byte each, at most `max_json_depth`), whether it
 * is inside a string, what is expected next — so it costs O(1) memory. Strings are skipped with
 * `Buffer.indexOf` (native `memchr`), so a 20 MiB base64 image costs a few ms, not a byte loop.
 *
 * It also reads the body's top-level `"model"` string on the way, so a lane named by
 * `X-Sluice-Model` can be checked against the body's model without `JSON.parse` (parse.ts); a
 * member it cannot read plainly (a key written with escapes, a value with escapes or over
 * {@link MAX_MODEL_BYTES}) makes {@link JsonGuard.topModel} answer `unsure`.
 */
import { HttpError } from "./http-error.js";

/** The two bounds (`admission.max_json_depth`, `admission.max_json_values`). */
export interface JsonLimits {
  readonly maxDepth: number;
  readonly maxValues: number;
}

/** 400: a JSON body over one of the bounds, with the bound's key, its value and where it was crossed. */
export class JsonLimitError extends HttpError {
  constructor(
    /** The config key of the bound: `admission.max_json_depth` or `admission.max_json_values`. */
    readonly limitKey: string,
    readonly limit: number,
    /** Byte offset in the body where the bound was crossed. */
    readonly offset: number,
  ) {
    super(
      400,
      "bad_request",
      limitKey.endsWith("depth")
        ? `the JSON body nests deeper than ${limit} levels (${limitKey}) at byte ${offset}`
        : `the JSON body holds more than ${limit} values (${limitKey}) by byte ${offset}`,
      "body",
    );
  }
}

/** What the scan read of the top-level `model` member. */
export type TopModel =
  | { readonly kind: "absent" }
  | { readonly kind: "string"; readonly value: string }
  /** Written in a way the scan does not decode (escapes, not a string, very long): parse to know. */
  | { readonly kind: "unsure" };

/** A `model` value longer than this is not captured (no configured name is that long). */
export const MAX_MODEL_BYTES = 256;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OBJECT = 1;
const ARRAY = 2;
/** What the next non-blank byte outside a string is. */
const AFTER_VALUE = 0;
const KEY = 1;
const VALUE = 2;
const MODEL_KEY = Buffer.from("model");
/** Open containers the scan has room for before it grows its stack. */
const INITIAL_STACK = 128;
/** Bytes of a string looked at one by one before `indexOf` is asked for the rest. */
const NEAR = 32;

/** Each byte's part in the scan outside strings (a table: one load instead of a chain of tests). */
const OTHER = 0;
const BLANK = 1;
const OPEN = 2;
const CLOSE = 3;
const COMMA = 4;
const COLON = 5;
const STRING = 6;
const BYTE_KIND = new Uint8Array(256);
for (const c of [0x20, 0x0a, 0x0d, 0x09]) BYTE_KIND[c] = BLANK;
BYTE_KIND[0x7b] = OPEN; // {
BYTE_KIND[0x5b] = OPEN; // [
BYTE_KIND[0x7d] = CLOSE; // }
BYTE_KIND[0x5d] = CLOSE; // ]
BYTE_KIND[0x2c] = COMMA;
BYTE_KIND[0x3a] = COLON;
BYTE_KIND[QUOTE] = STRING;

export class JsonGuard {
  readonly #limits: JsonLimits;
  /** The open containers' kinds, `OBJECT` or `ARRAY`; index 1 is the outermost. */
  /**
   * The open containers' kinds, grown by doubling as the body nests (a raised `max_json_depth`
   * costs nothing until a body uses it).
   */
  #stack: Uint8Array;
  #depth = 0;
  #values = 0;
  /** Bytes of earlier chunks, for the offset a refusal names. */
  #offset = 0;
  #expect = VALUE;
  #inString = false;
  /** The byte after a backslash is skipped (it may be in the next chunk). */
  #escape = false;
  /** The string being read is a key of the top-level object: compared with `model`. */
  #topKey = false;
  /** Bytes of the top-level key matched against `model` so far; −1 once it differs. */
  #keyMatch = 0;
  /** The value being waited for (after `:`) belongs to a top-level `model` key. */
  #modelNext = false;
  /** The bytes of the `model` string being read, or null when none is. */
  #modelBytes: number[] | null = null;
  #model: TopModel = { kind: "absent" };

  constructor(limits: JsonLimits) {
    this.#limits = limits;
    this.#stack = new Uint8Array(Math.min(limits.maxDepth + 1, INITIAL_STACK));
  }

  /** The top-level `model` member as read so far (the last one wins, as in `JSON.parse`). */
  get topModel(): TopModel {
    return this.#model;
  }

  /** Scans the next chunk; throws {@link JsonLimitError} at the first byte past a bound. */
  feed(chunk: Buffer): void {
    // The hot state lives in locals for the loop, stored back at the end and around the calls
    // that read it (a top-level key or the `model` value: short strings read byte by byte).
    const n = chunk.length;
    let stack = this.#stack;
    const { maxDepth, maxValues } = this.#limits;
    let depth = this.#depth;
    let values = this.#values;
    let expect = this.#expect;
    let inString = this.#inString;
    let i = 0;
    if (this.#escape) {
      // The byte escaped at the end of the last chunk.
      this.#escape = false;
      this.#capture(-1);
      i = 1;
    }
    // The next quote and backslash at or after i, cached so each is searched for once per byte
    // (a string full of escapes must not rescan to its closing quote at every escape).
    let nextQuote = -2;
    let nextEscape = -2;
    while (i < n) {
      if (inString) {
        if (this.#topKey || this.#modelBytes !== null) {
          this.#inString = true;
          i = this.#readCaptured(chunk, i);
          inString = this.#inString;
          continue;
        }
        // Byte by byte while quotes or escapes are near (text with many "\n" would otherwise pay
        // a native call per escape); after NEAR plain bytes, indexOf finds the next one.
        let j = i;
        let plain = 0;
        for (;;) {
          if (j >= n) {
            i = n;
            break;
          }
          const b = chunk[j]!;
          if (b === BACKSLASH) {
            // The escaped byte is skipped; at the chunk's end it is the next chunk's first.
            if (j + 1 >= n) {
              this.#escape = true;
              i = n;
              break;
            }
            j += 2;
            plain = 0;
          } else if (b === QUOTE) {
            inString = false;
            i = j + 1;
            break;
          } else if (++plain < NEAR) j++;
          else {
            j++;
            plain = 0;
            if (nextQuote !== -1 && nextQuote < j) nextQuote = chunk.indexOf(QUOTE, j);
            if (nextEscape !== -1 && nextEscape < j) nextEscape = chunk.indexOf(BACKSLASH, j);
            const next =
              nextEscape !== -1 && (nextQuote === -1 || nextEscape < nextQuote) ? nextEscape : nextQuote;
            j = next === -1 ? n : next;
          }
        }
        continue;
      }
      const c = chunk[i]!;
      const kind = BYTE_KIND[c]!;
      if (kind === OTHER) {
        // The first byte of a number, true, false or null; the rest of it is AFTER_VALUE.
        if (expect === VALUE) {
          if (++values > maxValues) this.#refuse("admission.max_json_values", maxValues, i);
          if (this.#modelNext) this.#notPlain();
          expect = AFTER_VALUE;
        }
      } else if (kind === OPEN) {
        if (++values > maxValues) this.#refuse("admission.max_json_values", maxValues, i);
        if (depth >= maxDepth) this.#refuse("admission.max_json_depth", maxDepth, i);
        if (++depth === stack.length) stack = this.#grow(stack);
        stack[depth] = c === 0x7b ? OBJECT : ARRAY;
        expect = c === 0x7b ? KEY : VALUE;
        if (this.#modelNext) this.#notPlain();
      } else if (kind === CLOSE) {
        if (depth > 0) depth--;
        expect = AFTER_VALUE;
      } else if (kind === COMMA) expect = stack[depth] === OBJECT ? KEY : VALUE;
      else if (kind === COLON) expect = VALUE;
      else if (kind === STRING) {
        inString = true;
        if (expect === KEY) {
          if (depth === 1) {
            this.#topKey = true;
            this.#keyMatch = 0;
          }
        } else {
          if (++values > maxValues) this.#refuse("admission.max_json_values", maxValues, i);
          if (this.#modelNext) {
            this.#modelBytes = [];
            this.#modelNext = false;
          }
        }
        expect = AFTER_VALUE;
      }
      i++;
    }
    this.#depth = depth;
    this.#values = values;
    this.#expect = expect;
    this.#inString = inString;
    this.#offset += n;
  }

  #grow(stack: Uint8Array): Uint8Array {
    const grown = new Uint8Array(Math.min(stack.length * 2, this.#limits.maxDepth + 1));
    grown.set(stack);
    this.#stack = grown;
    return grown;
  }

  #refuse(key: string, limit: number, at: number): never {
    throw new JsonLimitError(key, limit, this.#offset + at);
  }

  /** The top-level `model` member is not a plain string: only `JSON.parse` can say what it is. */
  #notPlain(): void {
    this.#model = { kind: "unsure" };
    this.#modelNext = false;
  }

  /**
   * Reads a top-level key or a `model` value byte by byte (both are short); returns the next
   * index. Sets `#inString` false at the closing quote.
   */
  #readCaptured(chunk: Buffer, from: number): number {
    for (let i = from; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (c === BACKSLASH) {
        // Escapes are not decoded: the member is `unsure`, and the escaped byte skipped.
        this.#capture(-1);
        if (i + 1 < chunk.length) return i + 2;
        this.#escape = true;
        return chunk.length;
      }
      if (c === QUOTE) {
        this.#endCaptured();
        return i + 1;
      }
      this.#capture(c);
      // Once a key is known not to be `model`, or the value too long, skip the rest quickly.
      if (!this.#topKey && this.#modelBytes === null) return i + 1;
    }
    return chunk.length;
  }

  /** One byte of a captured string; −1 for an escaped one (the scan does not decode escapes). */
  #capture(c: number): void {
    if (this.#topKey) {
      if (c < 0 || this.#keyMatch < 0 || MODEL_KEY[this.#keyMatch] !== c) {
        // A top-level key with an escape may spell `model`: only JSON.parse knows.
        if (c < 0 && this.#keyMatch >= 0) this.#model = { kind: "unsure" };
        this.#keyMatch = -1;
        this.#topKey = false;
      } else this.#keyMatch++;
      return;
    }
    const bytes = this.#modelBytes;
    if (bytes === null) return;
    if (c < 0 || bytes.length >= MAX_MODEL_BYTES) {
      this.#model = { kind: "unsure" };
      this.#modelBytes = null;
    } else bytes.push(c);
  }

  #endCaptured(): void {
    this.#inString = false;
    if (this.#topKey) {
      this.#topKey = false;
      this.#modelNext = this.#keyMatch === MODEL_KEY.length;
      return;
    }
    const bytes = this.#modelBytes!;
    this.#modelBytes = null;
    // An earlier unsure member stays unsure: which one JSON.parse keeps is not known here.
    if (this.#model.kind !== "unsure")
      this.#model = { kind: "string", value: Buffer.from(bytes).toString("utf8") };
  }
}
