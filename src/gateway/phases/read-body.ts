/**
 * Phase 3: read the body within `max_body_bytes` for this request and `max_buffered_bytes` for
 * all requests together (413 past either). A declared `Content-Length` over the bound is refused
 * before one byte is read, and a body must arrive within `body_timeout_s` of when reading starts
 * (slowloris). A JSON body is scanned as it arrives (json-guard.ts): past `max_json_depth` or
 * `max_json_values` it stops being buffered at the chunk that crossed the bound, the rest is
 * dropped as it arrives, and it is refused 400 at its last byte ({@link bufferBody}).
 *
 * The body is buffered (issue 21) when the lane comes from it, when a token budget is on the
 * lane's path (metered.ts: the estimate needs it, whatever header named the lane), and when
 * `X-Sluice-Model` named the lane and the body is JSON (its own `model` must agree, parse.ts).
 * Otherwise — a route's body, or a non-JSON upload with `X-Sluice-Model`, on a lane with no token
 * budget — it streams straight through at dispatch, with the same two bounds from
 * {@link limitedBody}.
 */
import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import type { BufferBudget } from "../buffer-budget.js";
import type { GatewayParts, RequestContext } from "../context.js";
import { HttpError } from "../http-error.js";
import { JsonGuard } from "../json-guard.js";

export function readBody(ctx: RequestContext, gw: GatewayParts): boolean | Promise<boolean> {
  const { maxBodyBytes, bodyTimeoutMs } = gw.bodyLimits;
  checkDeclaredLength(ctx.req, maxBodyBytes);
  refuseEncodedBody(ctx);
  const json = isPlainJson(ctx.req);
  if (!mustBuffer(ctx, json)) return true; // streamed through
  if (json) {
    const { maxJsonDepth, maxJsonValues } = gw.config.admission;
    ctx.json = new JsonGuard({ maxDepth: maxJsonDepth, maxValues: maxJsonValues });
  }
  return bufferBody(ctx.req, maxBodyBytes, gw.buffers, bodyTimeoutMs, ctx, ctx.json);
}

/** True for `application/json` and `application/*+json` (the types the parse phase reads). */
export function isJsonType(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/(.+\+)?json\b/i.test(contentType);
}

/**
 * A JSON body sent as it is: a compressed one (`Content-Encoding: gzip`…) is bytes the scan cannot
 * read (a `[` in them is no bracket). One that reaches here streams through unread (a route's, on a
 * lane without a token budget): every other was refused by {@link refuseEncodedBody}.
 */
function isPlainJson(req: IncomingMessage): boolean {
  const encoding = req.headers["content-encoding"];
  return isJsonType(req.headers["content-type"]) && (encoding === undefined || encoding === "identity");
}

/**
 * A compressed body (`Content-Encoding` other than `identity`) is refused 415 wherever sluice must
 * read it: for the lane (`body.model`), for a token budget's estimate, or to compare its `model`
 * with `X-Sluice-Model`. Its bytes cannot be scanned, and counted by their size they under-count
 * compressed text many times over — a way past a token budget, or past the lane a header names.
 * A route's body on a lane without a token budget is never read, and still streams through.
 */
function refuseEncodedBody(ctx: RequestContext): void {
  const encoding = ctx.req.headers["content-encoding"];
  if (encoding === undefined || encoding.trim().toLowerCase() === "identity") return;
  const model = ctx.model;
  if (model !== null && ctx.routed !== undefined && !ctx.metered) return;
  const why =
    model === null
      ? "its model is read from it"
      : ctx.metered
        ? `model ${model.name} has a token budget, whose estimate reads it`
        : "its model must be compared with X-Sluice-Model";
  throw new HttpError(
    415,
    "unsupported_media_type",
    `a compressed body (Content-Encoding: ${encoding}) cannot be read, and ${why}; send it uncompressed`,
    "header:content-encoding",
  );
}

/** Whether the body must be read before the call waits for its lane (see the module comment). */
function mustBuffer(ctx: RequestContext, json: boolean): boolean {
  const model = ctx.model;
  if (model === null) return true;
  if (ctx.metered) return true;
  return json && ctx.routed === undefined;
}

/** Where a buffered body goes (the request context). */
export interface BodyTarget {
  body: Buffer | null;
  /** Bytes charged to the buffer budget, for the caller to give back when the request ends. */
  bodyBytes: number;
}

/** Refuses before reading when the declared length is already too large. */
export function checkDeclaredLength(req: IncomingMessage, maxBodyBytes: number): void {
  const declared = req.headers["content-length"];
  if (declared === undefined) return;
  const n = Number(declared);
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new HttpError(
      400,
      "bad_request",
      `Content-Length must be a whole number of bytes, got "${declared}"`,
      "header:content-length",
    );
  }
  if (n > maxBodyBytes) {
    throw new HttpError(
      413,
      "body_too_large",
      `the body is ${n} bytes; this gateway accepts at most ${maxBodyBytes}`,
      "header:content-length",
    );
  }
}

/**
 * Reads the whole body into `into`, charging its bytes to `budget` as they arrive, and feeding
 * them to `guard` (a JSON body's bounds) when there is one; resolves true. On success the caller
 * gives `into.bodyBytes` back when the request ends; on failure they are given back here and the
 * promise rejects with the 413/408 `HttpError`, or the guard's 400.
 *
 * A body over the guard's bounds, or one that would take the buffered bytes of all bodies past
 * `max_buffered_bytes`, stops being buffered at the chunk that crossed them (its bytes are given
 * back at once) and the rest is read and dropped; the 400 or 413 is sent at its last byte.
 * Sent earlier, it would be followed by the close that ends an unread upload, and a client still
 * writing gets a connection reset instead of the answer. `max_body_bytes` and `body_timeout_s`
 * still bound what is dropped.
 */
export function bufferBody(
  req: IncomingMessage,
  maxBodyBytes: number,
  budget: BufferBudget,
  bodyTimeoutMs: number,
  into: BodyTarget,
  guard: JsonGuard | null = null,
): Promise<true> {
  return new Promise((resolve, reject) => {
    const declared = declaredLength(req, maxBodyBytes);
    const chunks = new BodyChunks(declared);
    let size = 0;
    /**
     * Bytes held and charged to `budget` (none once the body was refused). A declared length is
     * charged whole before the first byte, since {@link BodyChunks} allocates it then: charged as
     * bytes arrive, many slow uploads declaring `max_body_bytes` would hold memory the aggregate
     * bound never saw.
     */
    let held = 0;
    let refused: Error | null = null;
    // A body trickled slower than body_timeout_s is cut off (slowloris bodies).
    const timer = setTimeout(() => {
      fail(
        new HttpError(408, "request_timeout", `the body did not arrive within ${bodyTimeoutMs} ms`, "body"),
      );
      req.socket.destroySoon();
    }, bodyTimeoutMs);
    const release = () => {
      budget.used -= held;
      held = 0;
      chunks.drop();
    };
    /** Charges `bytes` to the aggregate bound; past it, the body is refused (false). */
    const charge = (bytes: number): boolean => {
      held += bytes;
      budget.used += bytes;
      if (budget.used <= budget.limit) return true;
      // Past the aggregate bound: like a guard's refusal, its bytes go back at once (the bound
      // holds) and the rest is read and dropped, so the client reads the 413 at its last byte
      // instead of a reset from a close under its upload.
      refused = new HttpError(
        413,
        "body_too_large",
        `the gateway is buffering its maximum of ${budget.limit} bytes of request bodies; retry shortly`,
        "body",
      );
      release();
      return false;
    };
    const fail = (error: Error) => {
      clearTimeout(timer);
      release();
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("aborted", onAborted);
      req.resume(); // discard the rest so the refusal can still be read by the client
      reject(error);
    };
    if (declared !== null) charge(declared);
    const onData = (chunk: Buffer) => {
      const before = size;
      size += chunk.length;
      if (refused !== null) {
        if (size > maxBodyBytes) fail(refused);
        return;
      }
      if (size > maxBodyBytes) {
        return fail(new HttpError(413, "body_too_large", `the body exceeds ${maxBodyBytes} bytes`, "body"));
      }
      // Bytes past a declared length (or every byte of a chunked upload) were not charged yet.
      const uncharged = size - Math.max(before, declared ?? 0);
      if (uncharged > 0 && !charge(uncharged)) return;
      if (guard !== null) {
        try {
          guard.feed(chunk);
        } catch (error) {
          refused = error as Error;
          release();
          return;
        }
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      if (refused !== null) return fail(refused);
      clearTimeout(timer);
      into.body = chunks.take();
      into.bodyBytes = held;
      resolve(true);
    };
    const onError = (error: Error) => fail(error);
    const onAborted = () => fail(new Error("client aborted the upload"));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("aborted", onAborted);
  });
}

/**
 * The `Content-Length` a call's body goes upstream with: a buffered body's own length, or for a
 * streamed one the length its client declared (Node's parser holds the upload to it). Sent chunked
 * instead, a streamed call cost the pod a chunk parser and this process one more socket write per
 * call, the terminating chunk's: a third of its writes on the queue path (issue 26).
 */
export function forwardedLength(
  body: Buffer | null,
  req: IncomingMessage,
  maxBodyBytes: number,
): number | undefined {
  return body !== null ? body.length : (declaredLength(req, maxBodyBytes) ?? undefined);
}

/** The declared `Content-Length` when it is a length {@link checkDeclaredLength} let through. */
function declaredLength(req: IncomingMessage, maxBodyBytes: number): number | null {
  const declared = req.headers["content-length"];
  if (declared === undefined) return null;
  const n = Number(declared);
  return Number.isSafeInteger(n) && n >= 0 && n <= maxBodyBytes ? n : null;
}

/**
 * A body's bytes as they arrive. With a declared length they are copied into one buffer of that
 * size as each chunk arrives, so a 20 MiB body is held once: gathered as chunks and joined at the
 * end, it is held twice at the join (the chunks and their copy), and four such bodies at once grew
 * RSS past three times their size (issue 21 bounds it at two per request plus what is buffered).
 * A chunked upload, or one whose bytes disagree with its declared length, is gathered and joined.
 */
class BodyChunks {
  #whole: Buffer | null;
  #filled = 0;
  #chunks: Buffer[] = [];
  #size = 0;

  constructor(declared: number | null) {
    this.#whole = declared !== null && declared > 0 ? Buffer.allocUnsafe(declared) : null;
  }

  push(chunk: Buffer): void {
    this.#size += chunk.length;
    if (this.#whole !== null && this.#filled + chunk.length <= this.#whole.length) {
      chunk.copy(this.#whole, this.#filled);
      this.#filled += chunk.length;
      return;
    }
    if (this.#whole !== null) {
      // More bytes than declared (Node refuses that on HTTP/1.1; kept for safety): gather instead.
      this.#chunks.push(this.#whole.subarray(0, this.#filled));
      this.#whole = null;
    }
    this.#chunks.push(chunk);
  }

  /** The whole body (its length is every byte pushed). */
  take(): Buffer {
    if (this.#whole !== null)
      return this.#filled === this.#whole.length ? this.#whole : this.#whole.subarray(0, this.#filled);
    return this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#size);
  }

  drop(): void {
    this.#whole = null;
    this.#chunks = [];
    this.#filled = 0;
    this.#size = 0;
  }
}

/**
 * A body the gateway does not buffer for its lane, as each attempt sends it. A small upload comes
 * in the request's first packets and waits in the request's buffer while the call queues: all its
 * declared bytes there at the send, it is taken whole and goes upstream as one buffer in the
 * request's first write (and again, unchanged, on a re-dispatch or fallback). Streaming it cost an
 * async iteration on each side and a timer per call (issue 26: the queue path's CPU). Anything
 * still arriving streams through {@link limitedBody}.
 */
export class StreamedBody {
  #arrived: Buffer | null = null;

  constructor(
    private readonly req: IncomingMessage,
    private readonly limits: { maxBodyBytes: number; bodyTimeoutMs: number },
  ) {}

  /** The body taken whole at a send, which a re-dispatch may send again; null while none was. */
  get taken(): Buffer | null {
    return this.#arrived;
  }

  body(): Buffer | Readable {
    if (this.#arrived === null) this.#arrived = takeArrived(this.req, this.limits.maxBodyBytes);
    if (this.#arrived !== null) return this.#arrived;
    const { maxBodyBytes, bodyTimeoutMs } = this.limits;
    // undici accepts an async iterable body; its typings list only Readable.
    return limitedBody(this.req, maxBodyBytes, bodyTimeoutMs) as unknown as Readable;
  }
}

/** The whole body when every declared byte is in `req`'s buffer and none was read yet; else null. */
function takeArrived(req: IncomingMessage, maxBodyBytes: number): Buffer | null {
  const declared = declaredLength(req, maxBodyBytes);
  if (declared === null || declared === 0 || req.readableFlowing === true) return null;
  if (req.readableLength !== declared) return null;
  return req.read() as Buffer | null;
}

/**
 * The request body as forwarded when the lane is known before it is read: bytes pass through as
 * they arrive, but past `maxBodyBytes`, or slower than `bodyTimeoutMs` from the first read, the
 * upload fails with the 413/408 the buffered path would give.
 */
export async function* limitedBody(
  req: IncomingMessage,
  maxBodyBytes: number,
  bodyTimeoutMs: number,
): AsyncGenerator<Buffer> {
  const timer = setTimeout(
    () =>
      req.destroy(
        new HttpError(408, "request_timeout", `the body did not arrive within ${bodyTimeoutMs} ms`, "body"),
      ),
    bodyTimeoutMs,
  );
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBodyBytes)
        throw new HttpError(413, "body_too_large", `the body exceeds ${maxBodyBytes} bytes`, "body");
      yield chunk;
    }
  } finally {
    clearTimeout(timer);
  }
}
