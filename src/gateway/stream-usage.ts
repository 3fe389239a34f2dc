/**
 * A metered stream's generated text, and the stream its client is shown (issue 21).
 *
 * A stream whose usage never arrives is charged its prompt estimate plus the text it generated
 * (÷ 4): every string a model generates into — `content`, `text`, tool calls'
 * `function.arguments`, `reasoning_content` / `reasoning`, `refusal` — not only `content`, or a
 * stream of tool calls or reasoning would be refunded almost all of its cost.
 *
 * When sluice asked the provider for usage on the client's behalf (`stream-options.ts`), the
 * client must see the stream it asked for: the usage-only chunk (`"choices":[]` with a `usage`)
 * is dropped and the `"usage":null` member every other chunk then carries is cut out, byte for
 * byte; a chunk that carries usage beside its choices (not OpenAI's shape) is re-serialised
 * without it.
 *
 * SSE events are framed so a key or an edit never straddles a chunk boundary. The cost per chunk
 * is two native searches for the last event end, one regular-expression pass over the complete
 * events for generated text and, when stripping, one native search for `"usage"`.
 */

/** The members whose strings are generated text (chat, completions, tool calls, reasoning, refusals). */
const GENERATED = /"(?:content|text|arguments|reasoning_content|reasoning|refusal)"\s*:\s*"/g;
const LF_LF = Buffer.from("\n\n");
const LF_CRLF = Buffer.from("\n\r\n");
const LF = 0x0a;
const CR = 0x0d;
const USAGE = Buffer.from('"usage"');
const EMPTY = Buffer.alloc(0);
/**
 * The longest event framed. A stream whose event is longer is passed on as it is and its text no
 * longer counted: it then keeps its estimate (never a refund on ignorance).
 */
export const MAX_EVENT_BYTES = 1024 * 1024;

/**
 * Characters inside the generated-text strings of `text` (SSE events as latin1). Counted in the
 * raw JSON: an escape counts its characters and a multi-byte character its bytes, which errs on
 * the side of charging.
 */
export function generatedChars(text: string): number {
  return scanGenerated(text).chars;
}

/** The generated characters of `text` and whether any generated-text member was found. */
function scanGenerated(text: string): { chars: number; found: boolean } {
  let chars = 0;
  let found = false;
  GENERATED.lastIndex = 0;
  for (let m = GENERATED.exec(text); m !== null; m = GENERATED.exec(text)) {
    found = true;
    const start = GENERATED.lastIndex;
    const end = stringEnd(text, start);
    chars += end - start;
    GENERATED.lastIndex = Math.min(end + 1, text.length);
    if (end >= text.length) break;
  }
  return { chars, found };
}

/** Index of the quote closing the JSON string whose characters start at `start` (or the text's end). */
function stringEnd(text: string, start: number): number {
  for (let q = text.indexOf('"', start); q >= 0; q = text.indexOf('"', q + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return q;
  }
  return text.length;
}

/** One metered stream as it passes: its generated text counted, its client's copy stripped if asked. */
export class StreamText {
  #chars = 0;
  /** A generated-text member was seen (a stream of a shape sluice knows). */
  #found = false;
  /** The bytes of an event not yet complete. */
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** The last two bytes pushed (an event end can straddle two chunks). */
  #last = 0;
  #beforeLast = 0;
  /** Framing gave up on an overlong event: the rest passes as it is, uncounted. */
  #lost = false;

  constructor(
    /** Remove the usage sluice asked for from what the client receives. */
    readonly strip: boolean,
  ) {}

  /** Takes a chunk of the pod's answer; returns what the client is sent now. */
  push(chunk: Buffer): Buffer {
    if (this.#lost || chunk.length === 0) return chunk;
    let end = lastEventEnd(chunk);
    if (end < 0) end = this.#straddlingEnd(chunk);
    this.#beforeLast = chunk.length > 1 ? chunk[chunk.length - 2]! : this.#last;
    this.#last = chunk[chunk.length - 1]!;
    if (end < 0) {
      this.#held.push(chunk);
      this.#heldBytes += chunk.length;
      if (this.#heldBytes <= MAX_EVENT_BYTES) return this.strip ? EMPTY : chunk;
      this.#lost = true;
      const held = this.#takeHeld();
      return this.strip ? held : chunk;
    }
    const head = end === chunk.length ? chunk : chunk.subarray(0, end);
    const events = this.#heldBytes === 0 ? head : Buffer.concat([this.#takeHeld(), head]);
    if (end < chunk.length) {
      this.#held.push(chunk.subarray(end));
      this.#heldBytes = chunk.length - end;
    }
    this.#count(events);
    return this.strip ? withoutUsage(events) : chunk;
  }

  /** At the stream's end: an unterminated last event, counted and (stripping) sent as it is. */
  end(): Buffer | null {
    if (this.#heldBytes === 0) return null;
    const rest = this.#takeHeld();
    if (!this.#lost) this.#count(rest);
    return this.strip ? rest : null;
  }

  /** Generated characters; undefined when the stream's text was not recognised or not all counted. */
  generated(): number | undefined {
    return this.#lost || !this.#found ? undefined : this.#chars;
  }

  #count(events: Buffer): void {
    const { chars, found } = scanGenerated(events.toString("latin1"));
    this.#chars += chars;
    if (found) this.#found = true;
  }

  #takeHeld(): Buffer {
    const held = this.#held.length === 1 ? this.#held[0]! : Buffer.concat(this.#held, this.#heldBytes);
    this.#held = [];
    this.#heldBytes = 0;
    return held;
  }

  /** The end of an event whose blank line began in the previous chunk, or -1. */
  #straddlingEnd(chunk: Buffer): number {
    if (this.#heldBytes === 0) return -1;
    const first = chunk[0];
    if (first === LF && (this.#last === LF || (this.#last === CR && this.#beforeLast === LF))) return 1;
    if (first === CR && chunk[1] === LF && this.#last === LF) return 2;
    return -1;
  }
}

/** Just past the last blank line (`\n\n` or `\n\r\n`) in `buf`, or -1. */
function lastEventEnd(buf: Buffer): number {
  const n = buf.length;
  // The usual chunk: whole events, the last ending the chunk (one check, no search).
  if (n >= 2 && buf[n - 1] === LF && buf[n - 2] === LF) return n;
  const a = buf.lastIndexOf(LF_LF);
  const b = buf.lastIndexOf(LF_CRLF);
  return Math.max(a < 0 ? -1 : a + 2, b < 0 ? -1 : b + 3);
}

/** Just past the first blank line at or after `from`, or the buffer's end. */
function eventEndAfter(buf: Buffer, from: number): number {
  for (let i = buf.indexOf(LF, from); i >= 0; i = buf.indexOf(LF, i + 1)) {
    if (buf[i + 1] === LF) return i + 2;
    if (buf[i + 1] === CR && buf[i + 2] === LF) return i + 3;
  }
  return buf.length;
}

/** Where the event holding `at` starts: just past the blank line before it, or 0. */
function eventStartBefore(buf: Buffer, at: number): number {
  const a = buf.lastIndexOf(LF_LF, at);
  const b = buf.lastIndexOf(LF_CRLF, at);
  return Math.max(a < 0 ? 0 : a + 2, b < 0 ? 0 : b + 3);
}

/** Complete SSE `events` without the usage sluice asked for (see the module's comment). */
export function withoutUsage(events: Buffer): Buffer {
  let at = events.indexOf(USAGE);
  if (at < 0) return events;
  const parts: Buffer[] = [];
  let from = 0;
  while (at >= 0) {
    // OpenAI's every chunk: `,"usage":null` — cut out in place, no event framing needed.
    if (events[at - 1] === 0x2c && events.compare(NULL_VALUE, 0, NULL_VALUE.length, at + 7, at + 12) === 0) {
      parts.push(events.subarray(from, at - 1));
      from = at + 7 + NULL_VALUE.length;
      at = events.indexOf(USAGE, from);
      continue;
    }
    const start = Math.max(from, eventStartBefore(events, at));
    const end = eventEndAfter(events, at);
    parts.push(events.subarray(from, start), editedEvent(events.subarray(start, end)));
    from = end;
    at = end < events.length ? events.indexOf(USAGE, end) : -1;
  }
  parts.push(events.subarray(from));
  return Buffer.concat(parts);
}

/** One event without its usage: dropped if it carries nothing else, else without the member. */
function editedEvent(event: Buffer): Buffer {
  const key = event.indexOf(USAGE);
  let v = skipSpaces(event, key + USAGE.length);
  if (event[v] !== 0x3a /* : */) return event;
  v = skipSpaces(event, v + 1);
  if (event.subarray(v, v + 4).equals(NULL)) return withoutMember(event, key, v + 4);
  if (event[v] !== 0x7b /* { */) return event;
  // OpenAI's usage chunk: no choices, only the usage the client did not ask for.
  if (EMPTY_CHOICES.test(event.toString("latin1"))) return EMPTY;
  return reserialisedWithoutUsage(event);
}

const NULL = Buffer.from("null");
/** What follows `"usage"` in the member OpenAI writes into every chunk of a stream that asked. */
const NULL_VALUE = Buffer.from(":null");
const EMPTY_CHOICES = /"choices"\s*:\s*\[\s*\]/;

function skipSpaces(buf: Buffer, i: number): number {
  while (i < buf.length && (buf[i] === 0x20 || buf[i] === 0x09)) i++;
  return i;
}

/** `event` without the member from its key at `key` to its value's end `valueEnd`, and one comma. */
function withoutMember(event: Buffer, key: number, valueEnd: number): Buffer {
  let before = key - 1;
  while (before >= 0 && (event[before] === 0x20 || event[before] === 0x09)) before--;
  if (event[before] === 0x2c /* , */)
    return Buffer.concat([event.subarray(0, before), event.subarray(valueEnd)]);
  const after = skipSpaces(event, valueEnd);
  if (event[after] === 0x2c)
    return Buffer.concat([event.subarray(0, key), event.subarray(skipSpaces(event, after + 1))]);
  return event;
}

/** A chunk with usage beside its choices (not OpenAI's shape): its `data:` JSON without `usage`. */
function reserialisedWithoutUsage(event: Buffer): Buffer {
  const text = event.toString("utf8");
  const data = /^data: ?(.*)$/m.exec(text);
  if (data === null) return event;
  try {
    const chunk = JSON.parse(data[1]!) as Record<string, unknown>;
    if (chunk === null || typeof chunk !== "object") return event;
    delete chunk.usage;
    const start = data.index;
    return Buffer.from(
      `${text.slice(0, start)}data: ${JSON.stringify(chunk)}${text.slice(start + data[0].length)}`,
    );
  } catch {
    return event;
  }
}
