/**
 * The gateway's `ServerResponse`: it counts the body bytes handed to it, so settle's log line
 * says what was actually sent whoever wrote the answer (dispatch, a capacity refusal, a
 * bad-input answer). Node builds each response from the class given to
 * `createServer({ ServerResponse })`, its documented hook for this; a `writeHead` with a flat
 * header list leaves nothing `getHeader` could read back.
 */
import { type IncomingMessage, ServerResponse } from "node:http";

type Callback = (error?: Error | null) => void;

export class CountedResponse<
  Request extends IncomingMessage = IncomingMessage,
> extends ServerResponse<Request> {
  /** Body bytes passed to `write()`/`end()` so far (those of a HEAD answer are counted, not sent). */
  bodyBytes = 0;

  // biome-ignore lint/suspicious/noExplicitAny: the signature of ServerResponse.write
  override write(chunk: any, encoding?: BufferEncoding | Callback, callback?: Callback): boolean {
    this.bodyBytes += byteLength(chunk, encoding);
    return super.write(chunk, encoding as BufferEncoding, callback);
  }

  // biome-ignore lint/suspicious/noExplicitAny: the signature of ServerResponse.end
  override end(chunk?: any, encoding?: BufferEncoding | Callback, callback?: Callback): this {
    this.bodyBytes += byteLength(chunk, encoding);
    return super.end(chunk, encoding as BufferEncoding, callback);
  }
}

/** The size of a chunk as Node will send it; 0 for no chunk (or a callback in its place). */
function byteLength(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === "string")
    return Buffer.byteLength(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8");
  if (chunk instanceof Uint8Array) return chunk.byteLength;
  return 0;
}
