/**
 * Phase 6: send the call to the pod the lease names, through that pod's keep-alive
 * undici pool, and stream the answer back byte for byte. A pod that refuses before starting the
 * call (connection refused or reset before any response byte, or an overload status) gets the
 * call re-dispatched to another pod within the lane's retry budget — only while the body can be
 * replayed and nothing has been sent to the client. The outcome goes to the lease (AIMD, breaker).
 *
 * Built on undici's dispatcher handler API rather than `request()`: the answer's chunks go
 * straight from the upstream socket to the client's, with no body stream, async iterator or
 * promise per chunk, and backpressure by pausing the upstream read (STYLE: a lean request path).
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import type { Lease } from "../../core/lease.js";
import { classifyOutcome } from "../../core/outcome.js";
import type { DispatchResult, GatewayParts, RequestContext } from "../context.js";
import { HttpError } from "../http-error.js";
import { flatResponseHeaders, type Upstreams } from "../upstreams.js";
import { UsageTap } from "../usage.js";
import { limitedBody } from "./read-body.js";

export interface DispatchInput {
  req: IncomingMessage;
  res: ServerResponse;
  lease: Lease;
  model: string;
  path: string;
  /** The buffered body (replayable), or null to stream `req` through. */
  body: Buffer | null;
  /** Bounds for a body streamed through. */
  limits: { readonly maxBodyBytes: number; readonly bodyTimeoutMs: number };
  stream: boolean;
  /** Headers sluice adds to the answer. */
  extraHeaders: Record<string, string | number>;
}

const OVERLOAD = new Set([502, 503, 504, 529]);
const CLIENT_GONE = new Error("client disconnected");

/**
 * The phase: sends the call to the lease's pod (the fallback lane's when the first choice was
 * tripped) and fills `ctx.result`. Resolves `false` once the answer has been forwarded (the
 * request has ended), or rejects with the client-side `HttpError` (413/408) of a body streamed
 * through.
 */
export function dispatch(ctx: RequestContext, gw: GatewayParts): Promise<boolean> {
  const lease = ctx.lease!;
  const input: DispatchInput = {
    req: ctx.req,
    res: ctx.res,
    lease,
    model: lease.lane,
    path: ctx.path,
    body: ctx.body,
    limits: gw.bodyLimits,
    stream: ctx.stream,
    extraHeaders: {
      "x-sluice-request-id": ctx.id,
      "x-sluice-lane": lease.lane,
      "x-sluice-priority": lease.priority,
    },
  };
  return new Promise((resolve, reject) => {
    const exchange = new Exchange(gw.upstreams, input, resolve, reject);
    ctx.result = exchange.result;
    exchange.send();
  });
}

/** One call's trip upstream and back, as undici handler callbacks. */
class Exchange implements Dispatcher.DispatchHandler {
  readonly result: DispatchResult = {
    status: 0,
    bytes: 0,
    usage: undefined,
    overloadStatus: undefined,
    clientGone: false,
    error: undefined,
  };
  readonly #headers: Record<string, string | string[]>;
  #controller: Dispatcher.DispatchController | null = null;
  #tap: UsageTap | null = null;
  /** An overload answer being read before deciding whether to re-dispatch. */
  #held: { status: number; headers: IncomingHttpHeaders; chunks: Buffer[] } | null = null;
  #done = false;
  #listening = false;
  #clientGone = false;
  #retrying = false;

  constructor(
    readonly upstreams: Upstreams,
    readonly input: DispatchInput,
    /** Called with `false` (the request has ended) once the answer is forwarded. */
    readonly resolve: (next: false) => void,
    readonly reject: (e: unknown) => void,
  ) {
    this.#headers = upstreams.requestHeaders(input.req.headers, input.model, input.body?.length);
  }

  send(): void {
    const { input } = this;
    if (!this.#listening) {
      this.#listening = true;
      input.res.on("close", this.#onClose);
    }
    const target = this.upstreams.target(input.lease.pod!);
    this.#controller = null;
    this.#held = null;
    target.pool.dispatch(
      {
        path: target.basePath + input.path,
        method: input.req.method as Dispatcher.HttpMethod,
        headers: this.#headers,
        // undici accepts an async iterable body; its typings list only Readable.
        body:
          input.body ??
          (limitedBody(
            input.req,
            input.limits.maxBodyBytes,
            input.limits.bodyTimeoutMs,
          ) as unknown as Readable),
      },
      this,
    );
  }

  /** The client went away before its answer was complete: abort the upstream request. */
  readonly #onClose = (): void => {
    if (this.input.res.writableFinished) return;
    this.#clientGone = true;
    this.#controller?.abort(CLIENT_GONE);
    // A re-dispatch waiting for a pod has no one to answer any more: give it up.
    if (this.#retrying) this.input.lease.release();
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#clientGone) controller.abort(CLIENT_GONE);
  }

  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    const { input } = this;
    this.result.status = status;
    this.#responseHeaders = headers;
    if (OVERLOAD.has(status) && input.body !== null) {
      // The pod did not run the call: read its answer, then re-dispatch if the budget allows.
      this.#held = { status, headers, chunks: [] };
      return;
    }
    input.extraHeaders["x-sluice-queue-ms"] = Math.round(input.lease.queuedMs);
    input.res.writeHead(status, flatResponseHeaders(headers, input.extraHeaders));
    // Head, body and end of a small answer usually arrive in one tick: send them in one write.
    input.res.cork();
    process.nextTick(uncork, input.res);
    const sse = input.stream || String(headers["content-type"] ?? "").includes("event-stream");
    this.#tap = new UsageTap(sse);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#held !== null) {
      this.#held.chunks.push(chunk);
      return;
    }
    this.#tap!.push(chunk);
    if (!this.input.res.write(chunk)) {
      // Backpressure: stop reading the pod until the client has taken what it was sent.
      controller.pause();
      this.input.res.once("drain", () => controller.resume());
    }
  }

  onResponseEnd(): void {
    const held = this.#held;
    if (held !== null) {
      void this.#afterOverload(held);
      return;
    }
    const { input, result } = this;
    input.res.end();
    result.bytes = this.#tap!.bytes;
    result.usage = this.#tap!.usage();
    const status = result.status;
    if (OVERLOAD.has(status) || status === 429) {
      result.overloadStatus = status;
      input.lease.failed({ status, headers: this.#responseHeaders ?? undefined });
    } else if (status >= 500) {
      input.lease.failed(status);
    } else {
      const u = result.usage;
      input.lease.succeeded(
        u ? { promptTokens: u.promptTokens, completionTokens: u.completionTokens } : undefined,
      );
    }
    this.#finish();
  }

  /** The answer's headers, for a 429's quota reset. */
  #responseHeaders: IncomingHttpHeaders | null = null;

  onResponseError(_c: Dispatcher.DispatchController, error: Error): void {
    void this.#onError(error);
  }

  async #afterOverload(held: {
    status: number;
    headers: IncomingHttpHeaders;
    chunks: Buffer[];
  }): Promise<void> {
    const { input, result } = this;
    result.overloadStatus = held.status;
    if (await this.#retry({ status: held.status, headers: held.headers })) return this.send();
    // No re-dispatch: pass the pod's own answer through (the lease already heard the refusal).
    const body = Buffer.concat(held.chunks);
    input.extraHeaders["x-sluice-queue-ms"] = Math.round(input.lease.queuedMs);
    if (!input.res.headersSent)
      input.res.writeHead(held.status, flatResponseHeaders(held.headers, input.extraHeaders));
    input.res.end(body);
    result.bytes = body.length;
    this.#finish();
  }

  async #onError(error: Error): Promise<void> {
    const { input, result } = this;
    if (this.#clientGone) {
      result.clientGone = true;
      input.lease.release(); // a client abort says nothing about the pod
      return this.#finish();
    }
    // The client's streamed body broke a bound (413/408): the client's fault, not the pod's.
    const own = error instanceof HttpError ? error : (error as { cause?: unknown }).cause;
    if (own instanceof HttpError) {
      input.lease.release();
      this.#done = true;
      input.res.off("close", this.#onClose);
      this.reject(own);
      return;
    }
    // Refused before any response byte: the pod never started it; try another one.
    if (
      !input.res.headersSent &&
      this.#held === null &&
      input.body !== null &&
      classifyOutcome(error).kind === "congestion" &&
      (await this.#retry(error))
    ) {
      return this.send();
    }
    input.lease.failed(error);
    result.error = error.message;
    if (input.res.headersSent) input.res.destroy(error);
    else {
      result.status = 502;
      sendUpstreamError(input.res, input.lease, input.extraHeaders, error);
    }
    this.#finish();
  }

  async #retry(failure: unknown): Promise<boolean> {
    this.#retrying = true;
    const again = await this.input.lease.retry(failure).catch(() => false);
    this.#retrying = false;
    return again && !this.#clientGone;
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    this.input.res.off("close", this.#onClose);
    this.resolve(false);
  }
}

function uncork(res: ServerResponse): void {
  res.uncork();
}

function sendUpstreamError(
  res: ServerResponse,
  lease: Lease,
  extra: Record<string, string | number>,
  error: Error,
): void {
  const body = JSON.stringify({
    error: {
      type: "upstream_error",
      code: "upstream_error",
      message: `pod ${lease.pod} failed: ${error.message}`,
      lane: lease.lane,
    },
  });
  res.writeHead(502, {
    ...extra,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}
