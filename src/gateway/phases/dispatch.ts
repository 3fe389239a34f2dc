/**
 * Phase 6: send the call to the pod the lease names, through that pod's keep-alive undici pool,
 * and stream the answer back byte for byte. The outcome goes to the lease (AIMD, breaker), and
 * every failed attempt to `ctx.failures` (pod, cause, detail for the log).
 *
 * A call is sent again only when the pod provably never started it (DESIGN §1.3): the connection
 * failed before the request was written, or the pod answered its own overload status. It goes to
 * another pod of the lane within the re-dispatch budget, else to the lane's `fallback` model under
 * that model's name — and only while the body can be replayed and nothing was sent to the client.
 * A call whose request the pod may hold in full (written, then the connection reset, or no answer
 * in time) is never sent again: it may have run. It ends in 502 `upstream_error` or 504
 * `upstream_timeout`, with a plain message; the detail goes to the log.
 *
 * Built on undici's dispatcher handler API rather than `request()`: the answer's chunks go
 * straight from the upstream socket to the client's, with no body stream, async iterator or
 * promise per chunk, and backpressure by pausing the upstream read (STYLE: a lean request path).
 */
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import type { Lease } from "../../core/lease.js";
import type { FailureInput } from "../../core/outcome.js";
import { attemptError } from "../attempt-error.js";
import type { DispatchResult, GatewayParts, RequestContext, UpstreamFailure } from "../context.js";
import { HttpError, sendUpstreamError, type UpstreamErrorCode } from "../http-error.js";
import { withModelName } from "../model-name.js";
import { rateLimitHeaders } from "../rate-headers.js";
import { type CallTimeouts, flatResponseHeaders } from "../upstreams.js";
import { settledUsage, UsageTap } from "../usage.js";
import { limitedBody } from "./read-body.js";

const OVERLOAD = new Set([502, 503, 504, 529]);
/**
 * The most of an overload answer's body held while deciding whether to re-dispatch. Past it the
 * pod's call is aborted and the rest never read: two 503s with 200 MiB bodies must not cost the
 * gateway 400 MiB (issue 8).
 */
export const MAX_HELD_BYTES = 64 * 1024;
const CLIENT_GONE = new Error("client disconnected");
/** What the lease hears of an attempt whose connection failed before the request was written. */
const NEVER_TAKEN = { refused: true } as const;
const HELD_TOO_LARGE = new Error(`overload answer body past ${MAX_HELD_BYTES} bytes; the rest was not read`);

/**
 * The phase: sends the call to the lease's pod and fills `ctx.result`. Resolves `false` once the
 * answer has been forwarded (the request has ended), or rejects with the client-side `HttpError`
 * (413/408) of a body streamed through, or with the fallback lane's refusal.
 */
export function dispatch(ctx: RequestContext, gw: GatewayParts): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const exchange = new Exchange(ctx, gw, resolve, reject);
    ctx.result = exchange.result;
    exchange.send();
  });
}

/** An overload answer being read before deciding whether to re-dispatch. */
interface Held {
  status: number;
  headers: IncomingHttpHeaders;
  chunks: Buffer[];
  bytes: number;
  /**
   * Why its body was not read to the end (longer than {@link MAX_HELD_BYTES}, or the pod failed
   * mid-body); undefined when it was read whole.
   */
  incomplete: string | undefined;
}

/** One call's trips upstream and back, as undici handler callbacks. */
class Exchange implements Dispatcher.DispatchHandler {
  readonly result: DispatchResult = {
    status: 0,
    bytes: 0,
    usage: undefined,
    overloadStatus: undefined,
    clientGone: false,
    error: undefined,
    ttfbMs: undefined,
  };
  /** `performance.now()` when the attempt under way was sent. */
  #sentAt = 0;
  /** Headers sluice adds to the answer. */
  readonly #extra: Record<string, string | number>;
  /** Lanes this call has been on: a fallback chain is followed once per lane. */
  readonly #lanes = new Set<string>();
  #lease!: Lease;
  /** The body sent: the buffered one, with the fallback's model name on a fallback lane. */
  #body: Buffer | null = null;
  #headers!: Record<string, string | string[]>;
  #timeouts!: CallTimeouts;
  /** The pod of the attempt under way (a re-dispatch changes the lease's). */
  #pod = "";
  #controller: Dispatcher.DispatchController | null = null;
  #tap: UsageTap | null = null;
  #held: Held | null = null;
  /** The answer's headers, for a 429's quota reset. */
  #responseHeaders: IncomingHttpHeaders | null = null;
  /**
   * undici has started this attempt on a connected socket. A buffered body is written in the
   * same tick (undici's `writeBuffer`; the handler API passes no `onRequestSent` on), so from
   * here the pod may hold the whole request.
   */
  #started = false;
  #done = false;
  #clientGone = false;
  /** A re-dispatch is waiting for a pod. */
  #retrying = false;

  constructor(
    readonly ctx: RequestContext,
    readonly gw: GatewayParts,
    /** Called with `false` (the request has ended) once the answer is forwarded. */
    readonly resolve: (next: false) => void,
    readonly reject: (e: unknown) => void,
  ) {
    this.#extra = { "x-sluice-request-id": ctx.id };
    this.#lanes.add(ctx.model!.name);
    this.#useLease(ctx.lease!);
    ctx.res.on("close", this.#onClose);
  }

  /** Takes `lease` (the first, or the fallback's): its lane's name, credentials and timeouts. */
  #useLease(lease: Lease): void {
    const { ctx, gw } = this;
    this.#lease = lease;
    ctx.lease = lease;
    const lane = lease.lane;
    this.#lanes.add(lane);
    this.#extra["x-sluice-lane"] = lane;
    this.#extra["x-sluice-priority"] = lease.priority;
    // A lane reached as a fallback (here or by the Governor at acquire) serves its own model name.
    const body = ctx.body;
    this.#body = body === null || lane === ctx.model!.name ? body : withModelName(body, lane);
    this.#headers = gw.upstreams.requestHeaders(ctx.req.headers, lane, this.#body?.length, ctx.id);
    this.#timeouts = gw.upstreams.timeouts(lane);
  }

  send(): void {
    const { ctx, gw } = this;
    const pod = this.#lease.pod!;
    const target = gw.upstreams.target(pod);
    this.#pod = pod;
    this.#controller = null;
    this.#held = null;
    this.#responseHeaders = null;
    this.#started = false;
    this.#sentAt = performance.now();
    const { maxBodyBytes, bodyTimeoutMs } = gw.bodyLimits;
    target.pool.dispatch(
      {
        path: target.basePath + ctx.path,
        method: ctx.req.method as Dispatcher.HttpMethod,
        headers: this.#headers,
        // undici accepts an async iterable body; its typings list only Readable.
        body: this.#body ?? (limitedBody(ctx.req, maxBodyBytes, bodyTimeoutMs) as unknown as Readable),
        headersTimeout: this.#timeouts.headersTimeout,
        bodyTimeout: this.#timeouts.bodyTimeout,
      },
      this,
    );
  }

  /** The client went away before its answer was complete: abort the upstream request. */
  readonly #onClose = (): void => {
    if (this.ctx.res.writableFinished) return;
    this.#clientGone = true;
    this.#controller?.abort(CLIENT_GONE);
    // A re-dispatch waiting for a pod has no one to answer any more: give it up. (A fallback
    // lease being waited for is given up by the request's own abort signal.)
    if (this.#retrying) this.#lease.release();
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    this.#started = true;
    if (this.#clientGone) controller.abort(CLIENT_GONE);
  }

  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    this.result.status = status;
    this.result.ttfbMs = performance.now() - this.#sentAt;
    this.#responseHeaders = headers;
    if (OVERLOAD.has(status) && this.#body !== null) {
      // The pod did not run the call: read its answer, then re-dispatch if the budget allows.
      this.#held = { status, headers, chunks: [], bytes: 0, incomplete: undefined };
      return;
    }
    const { res } = this.ctx;
    res.writeHead(status, flatResponseHeaders(headers, this.#answerHeaders()));
    // Head, body and end of a small answer usually arrive in one tick: send them in one write.
    res.cork();
    process.nextTick(uncork, res);
    const sse = this.ctx.stream || String(headers["content-type"] ?? "").includes("event-stream");
    this.#tap = new UsageTap(sse);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const held = this.#held;
    if (held !== null) {
      if (held.bytes + chunk.length > MAX_HELD_BYTES) {
        held.incomplete = HELD_TOO_LARGE.message;
        controller.abort(HELD_TOO_LARGE); // continues in onResponseError, with the status known
        return;
      }
      held.chunks.push(chunk);
      held.bytes += chunk.length;
      return;
    }
    this.#tap!.push(chunk);
    if (!this.ctx.res.write(chunk)) {
      // Backpressure: stop reading the pod until the client has taken what it was sent.
      controller.pause();
      this.ctx.res.once("drain", () => controller.resume());
    }
  }

  onResponseEnd(): void {
    const held = this.#held;
    if (held !== null) {
      void this.#afterOverload(held).catch(this.#failed);
      return;
    }
    const { result } = this;
    this.ctx.res.end();
    result.bytes = this.#tap!.bytes;
    result.usage = this.#tap!.usage();
    const status = result.status;
    if (OVERLOAD.has(status) || status === 429) {
      result.overloadStatus = status;
      this.#record({ pod: this.#pod, cause: "status", status });
      this.#lease.failed({ status, headers: this.#responseHeaders ?? undefined });
    } else if (status >= 500) {
      this.#lease.failed(status);
    } else {
      // The token budgets settle with what the call really used (usage.ts: `settledUsage`).
      this.#lease.succeeded(settledUsage(result.usage, this.#tap!, this.ctx.promptTokens));
    }
    this.#finish();
  }

  onResponseError(_c: Dispatcher.DispatchController, error: Error): void {
    void this.#onError(error).catch(this.#failed);
  }

  async #onError(error: Error): Promise<void> {
    if (this.#clientGone) return this.#gone();
    // The client's streamed body broke a bound (413/408): the client's fault, not the pod's.
    const own = error instanceof HttpError ? error : (error as { cause?: unknown }).cause;
    if (own instanceof HttpError) {
      this.#lease.release();
      return this.#failed(own);
    }
    const failure = attemptError(error, this.#started, this.#timeouts);
    // An overload answer whose body was cut (by us past the bound, or by the pod): its status
    // already said the pod did not run the call.
    const held = this.#held;
    if (held !== null) {
      held.incomplete ??= failure.detail;
      return this.#afterOverload(held);
    }
    if (failure.kind === "local") {
      // Never sent, and not the pod's doing: nothing to tell its breaker.
      this.gw.log.error(
        { request_id: this.ctx.id, pod: this.#pod, err: failure.detail },
        "upstream call not sent",
      );
      this.#lease.release({ sent: false });
    } else if (failure.kind === "not_started") {
      this.#record({ pod: this.#pod, cause: failure.cause, detail: failure.detail });
      // The pod never took it (congestion for the pod; token reservations refunded): another
      // pod, or the fallback, may take it.
      if (await this.#elsewhere(NEVER_TAKEN)) return;
    } else {
      this.#record({ pod: this.#pod, cause: failure.cause, detail: failure.detail });
      // A call the pod may have run is never sent again. The lease hears the error itself: a
      // timeout is a failure for the breaker, a reset congestion (outcome.ts).
      this.#lease.failed(error);
    }
    this.result.error = failure.detail;
    if (this.ctx.res.headersSent) {
      // Mid-answer there is nothing left to say: cut it, so it cannot pass for complete.
      this.ctx.res.destroy();
      return this.#finish();
    }
    this.#answer(failure.status, failure.code, failure.message);
  }

  async #afterOverload(held: Held): Promise<void> {
    this.result.overloadStatus = held.status;
    const detail = held.incomplete;
    this.#record({ pod: this.#pod, cause: "status", status: held.status, ...(detail ? { detail } : {}) });
    if (await this.#elsewhere({ status: held.status, headers: held.headers })) return;
    // Nowhere else to go: the pod's own answer (the lease already heard the refusal).
    const { res } = this.ctx;
    if (held.incomplete !== undefined) {
      // Only its start was read: say what it was, with its Retry-After, rather than half a body.
      const headers = this.#answerHeaders();
      const retryAfter = held.headers["retry-after"];
      if (typeof retryAfter === "string") headers["retry-after"] = retryAfter;
      const message = `the model server is overloaded (it answered ${held.status})`;
      sendUpstreamError(res, held.status, "upstream_error", message, this.#lease.lane, headers);
      this.result.status = held.status;
      return this.#finish();
    }
    const body = Buffer.concat(held.chunks, held.bytes);
    res.writeHead(held.status, flatResponseHeaders(held.headers, this.#answerHeaders()));
    res.end(body);
    this.result.bytes = body.length;
    this.#finish();
  }

  /**
   * The attempt never started: send the call to another pod of the lane, else to the lane's
   * fallback model. True when it went on (or the client left and it ended); false when it has
   * nowhere to go and the lease has ended with `failure`.
   */
  async #elsewhere(failure: FailureInput): Promise<boolean> {
    if (this.#body === null) {
      this.#lease.failed(failure); // a body streamed through cannot be sent twice
      return false;
    }
    this.#retrying = true;
    const again = await this.#lease.retry(failure).catch(() => false);
    this.#retrying = false;
    if (!again && !this.#clientGone) {
      const fallback = await this.#fallbackLease();
      if (fallback === null && !this.#clientGone) return false;
      if (fallback !== null) this.#useLease(fallback);
    }
    if (this.#clientGone) this.#gone();
    else this.send();
    return true;
  }

  /**
   * A lease on the current lane's `fallback` model, or null when there is none (or it was
   * already tried, or the client left while it was waited for). A refusal there is the answer.
   */
  async #fallbackLease(): Promise<Lease | null> {
    const { ctx, gw } = this;
    const name = gw.models.get(this.#lease.lane)?.fallback;
    if (name === undefined || ctx.shadow !== null || this.#lanes.has(name)) return null;
    ctx.abort ??= new AbortController();
    const { signal } = ctx.abort;
    const { priority, key } = ctx.claim!;
    try {
      return await gw.governor.acquire(name, { priority, key, tokens: ctx.tokens, signal, failFast: true });
    } catch (error) {
      if (signal.aborted) return null;
      throw error;
    }
  }

  /** Appends one failed attempt for the metrics and the log line (never the client). */
  #record(failure: UpstreamFailure): void {
    if (this.ctx.failures === null) this.ctx.failures = [failure];
    else this.ctx.failures.push(failure);
  }

  /** The headers sluice adds to an answer (with token or request budgets, their numbers). */
  #answerHeaders(): Record<string, string | number> {
    this.#extra["x-sluice-queue-ms"] = Math.round(this.#lease.queuedMs);
    const limits = this.gw.governor.rateLimits(this.#lease.lane, this.#lease.priority);
    if (limits.length > 0) Object.assign(this.#extra, rateLimitHeaders(limits));
    return this.#extra;
  }

  #answer(status: number, code: UpstreamErrorCode, message: string): void {
    this.result.status = status;
    sendUpstreamError(this.ctx.res, status, code, message, this.#lease.lane, this.#answerHeaders());
    this.#finish();
  }

  /** The client left: a client abort says nothing about the pod. */
  #gone(): void {
    this.result.clientGone = true;
    this.#lease.release();
    this.#finish();
  }

  /** Ends the phase with an error the pipeline answers (a 413/408, or a fallback's refusal). */
  readonly #failed = (error: unknown): void => {
    if (this.#done) return;
    this.#done = true;
    this.ctx.res.off("close", this.#onClose);
    this.reject(error);
  };

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    this.ctx.res.off("close", this.#onClose);
    this.resolve(false);
  }
}

function uncork(res: ServerResponse): void {
  res.uncork();
}
