/**
 * A call sent to a `fallback` model carries the fallback's own name (DESIGN §1.3: "the fallback
 * model under its own name"): a pod serving `small` may refuse, or mis-serve, `"model": "big"`.
 *
 * The body is otherwise forwarded as the bytes that arrived: only the top-level `model` string is
 * replaced, in place, so numbers too large for a double (a `seed`, say) and key order survive.
 * Parsing and re-serialising is kept for the one case the scan does not handle, a key written
 * with escapes (`"mod\u0065l"`).
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN = new Set([0x7b, 0x5b]); // { [
const CLOSE = new Set([0x7d, 0x5d]); // } ]
const KEY = Buffer.from('"model"');

/**
 * `body` (a JSON object whose top-level `model` the parse phase read) with that `model` replaced
 * by `name`. Every top-level `model` member is replaced, as `JSON.parse` reads the last one.
 */
export function withModelName(body: Buffer, name: string): Buffer {
  const spans = modelValueSpans(body);
  if (spans === null) return reserialised(body, name);
  const value = Buffer.from(JSON.stringify(name));
  const parts: Buffer[] = [];
  let at = 0;
  for (const [start, end] of spans) {
    parts.push(body.subarray(at, start), value);
    at = end;
  }
  parts.push(body.subarray(at));
  return Buffer.concat(parts);
}

/**
 * The [start, end) byte spans of the string values of top-level `"model"` keys, or null when no
 * such key is written plainly (or a `model` value is not a string).
 */
function modelValueSpans(body: Buffer): [number, number][] | null {
  const spans: [number, number][] = [];
  let depth = 0;
  // At depth 1, a string right after `{` or `,` is a key.
  let expectKey = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === QUOTE) {
      const end = stringEnd(body, i);
      if (depth === 1 && expectKey && end - i === KEY.length && body.subarray(i, end).equals(KEY)) {
        let v = end;
        while (v < body.length && body[v] !== COLON) v++;
        v++;
        while (v < body.length && isSpace(body[v]!)) v++;
        if (body[v] !== QUOTE) return null;
        const valueEnd = stringEnd(body, v);
        spans.push([v, valueEnd]);
        i = valueEnd - 1;
      } else i = end - 1;
      expectKey = false;
    } else if (OPEN.has(c)) {
      depth++;
      expectKey = depth === 1;
    } else if (CLOSE.has(c)) depth--;
    else if (c === 0x2c && depth === 1) expectKey = true; // ,
  }
  return spans.length > 0 ? spans : null;
}

/** The index just past the closing quote of the string opening at `start`. */
function stringEnd(body: Buffer, start: number): number {
  for (let i = start + 1; i < body.length; i++) {
    const c = body[i]!;
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return i + 1;
  }
  return body.length;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

function reserialised(body: Buffer, name: string): Buffer {
  let value: unknown;
  try {
    value = JSON.parse(body.toString("utf8"));
  } catch {
    // A body that is not JSON (an upload buffered for a token budget's estimate) is forwarded as
    // it arrived, as if it had streamed through.
    return body;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return body;
  (value as Record<string, unknown>).model = name;
  return Buffer.from(JSON.stringify(value));
}
