/**
 * A metered stream asks the provider for its usage (issue 21). OpenAI sends a stream's usage only
 * when the request says `stream_options: {"include_usage": true}`; without it the reconcile would
 * have to guess from the streamed text. So a streamed chat or text completion on a lane with a
 * token budget is forwarded with that option added, and the usage chunk it brings is removed from
 * what the client receives (`stream-usage.ts`), so the client sees exactly the stream it asked
 * for. A client that asked for usage itself gets it, untouched.
 *
 * Like `withModelName`, the body is otherwise forwarded as the bytes that arrived: the member is
 * written in right after the object's opening brace. The body is parsed again only in the rare
 * case where it already names `stream_options` or `include_usage` somewhere, and re-serialised
 * only when a top-level `stream_options` without `include_usage: true` must be changed.
 */

const OPTION = Buffer.from('"stream_options":{"include_usage":true},');
const STREAM_OPTIONS = Buffer.from('"stream_options"');
const INCLUDE_USAGE = Buffer.from('"include_usage"');

/** The body to forward, and whether the usage it asks for must be removed from the client's answer. */
export interface StreamUsageRequest {
  readonly body: Buffer;
  /** Sluice added the option: the usage chunk is not the client's. */
  readonly strip: boolean;
}

/** True for the OpenAI routes that take `stream_options` (chat and text completions). */
export function takesStreamOptions(path: string): boolean {
  const q = path.indexOf("?");
  const p = q < 0 ? path : path.slice(0, q);
  return p.endsWith("/chat/completions") || p.endsWith("/completions");
}

/**
 * `body` (a JSON object the parse phase read, with `stream: true`) asking for the stream's usage.
 * Unchanged, `strip: false`, when the client asked for it already.
 */
export function askForStreamUsage(body: Buffer): StreamUsageRequest {
  if (body.indexOf(STREAM_OPTIONS) < 0 && body.indexOf(INCLUDE_USAGE) < 0)
    return { body: withOption(body), strip: true };
  let value: unknown;
  try {
    value = JSON.parse(body.toString("utf8"));
  } catch {
    return { body, strip: false }; // the parse phase read it; cannot happen, and never worth a failure
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return { body, strip: false };
  const o = value as Record<string, unknown>;
  const options = o.stream_options;
  const plain = options !== null && typeof options === "object" && !Array.isArray(options);
  if (plain && (options as Record<string, unknown>).include_usage === true) return { body, strip: false };
  if (!Object.hasOwn(o, "stream_options")) return { body: withOption(body), strip: true };
  o.stream_options = { ...(plain ? (options as object) : {}), include_usage: true };
  return { body: Buffer.from(JSON.stringify(o)), strip: true };
}

/** `body` with the option as its first member (the first byte not blank is the object's `{`). */
function withOption(body: Buffer): Buffer {
  const open = body.indexOf(0x7b);
  return Buffer.concat([body.subarray(0, open + 1), OPTION, body.subarray(open + 1)]);
}
