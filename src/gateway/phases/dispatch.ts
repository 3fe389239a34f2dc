/**
 * Phase 6: send the call to the pod the lease names, through that pod's keep-alive undici pool,
 * and stream the answer back byte for byte. The outcome goes to the lease (AIMD, breaker), and
 * every failed attempt to `ctx.failures` (pod, cause, detail for the log).
 *
 * A call is sent again only when the pod provably never started it (DESIGN §1.3, issue 21): the
 * connection failed before the request was written, or the pod answered a status its config lists
 * as "not started" (`pods[].redispatch_statuses`, `redispatch.ts`; by default none: behind an
 * ingress a 502 or 504 can come after the pod took the call). It goes to another pod of the lane
 * within the re-dispatch budget, else to the lane's `fallback` model under that model's name — and
 * only while the body can be replayed and nothing was sent to the client. A call whose request the
 * pod may hold in full (written, then the connection reset, or no answer in time) is never sent
 * again: it may have run. It ends in 502 `upstream_error` or 504 `upstream_timeout`, with a plain
 * message; the detail goes to the log.
 *
 * On a lane with a token budget the answer's usage is read as it passes (`usage.ts`); a stream is
 * sent asking for its usage (`stream-options.ts`), which the client does not see unless it asked
 * (`stream-usage.ts`). A client that accepts nothing for `stream_idle_timeout_s` loses its call
 * (`client-flow.ts`), so it cannot hold its slot forever.
 *
 * The call is read in three parts (issue 23): one trip to one pod is an `Attempt` (`attempt.ts`,
 * undici's handler API: chunks socket to socket, backpressure by pausing the upstream read); where
 * a call its pod never started goes next is the retry policy (`redispatch.ts`: another pod of the
 * lane, else the fallback lane through the wait phase's acquire, `fallback.ts`); this file is the
 * call across its attempts — the lease it runs on, what each attempt's ending tells the lease, and
 * the answer when nothing else takes it.
 */
import type { Lease } from "../../core/lease.js";
import type { FailureInput } from "../../core/outcome.js";
import { Attempt, type AttemptOwner, type AttemptRequest, CLIENT_GONE } from "../attempt.js";
import { attemptError } from "../attempt-error.js";
import type { DispatchResult, GatewayParts, RequestContext, UpstreamFailure } from "../context.js";
import { bodyFor } from "../fallback.js";
import type { AnswerReading, ForwardedAnswer } from "../forwarded-answer.js";
import type { HeldAnswer } from "../held-answer.js";
import { HttpError, sendUpstreamError, type UpstreamErrorCode } from "../http-error.js";
import { rateLimitHeaders } from "../rate-headers.js";
import { type Redispatched, redispatch, redispatchable } from "../redispatch.js";
import { askForStreamUsage, takesStreamOptions } from "../stream-options.js";
import { settledUsage } from "../usage.js";
import { forwardedLength, StreamedBody } from "./read-body.js";

/** Statuses that are overload signals for the pod's width and breaker (DESIGN §1.3). */
const OVERLOAD = new Set([502, 503, 504, 529]);
/** What the lease hears of an attempt whose connection failed before the request was written. */
const NEVER_TAKEN = { refused: true } as const;

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

/** One call upstream across its attempts: the lease it runs on and how each attempt ends. */
class Exchange implements AttemptOwner, Redispatched {
  readonly result: DispatchResult = {
    status: 0,
    bytes: 0,
    usage: undefined,
    overloadStatus: undefined,
    clientGone: false,
    clientStalled: false,
    error: undefined,
    ttfbMs: undefined,
  };
  readonly reading: AnswerReading;
  /** Headers sluice adds to the answer. */
  readonly #extra: Record<string, string | number>;
  /** Lanes this call has been on: a fallback chain is followed once per lane. */
  readonly lanes = new Set<string>();
  lease!: Lease;
  /** The buffered body as every attempt sends it (asking for a metered stream's usage), or null. */
  readonly #request: Buffer | null;
  /** A body not buffered for the lane: taken whole if it has all arrived, else streamed. */
  readonly #streamed: StreamedBody;
  /** What an attempt on the current lease's lane sends (its body, headers and timeouts). */
  #sent!: AttemptRequest;
  /** The attempt under way (a re-dispatch makes a new one). */
  #attempt: Attempt | null = null;
  #done = false;
  clientGone = false;
  /** A re-dispatch is waiting for a pod. */
  waiting = false;

  constructor(
    readonly ctx: RequestContext,
    readonly gw: GatewayParts,
    /** Called with `false` (the request has ended) once the answer is forwarded. */
    readonly resolve: (next: false) => void,
    readonly reject: (e: unknown) => void,
  ) {
    this.#extra = { "x-sluice-request-id": ctx.id };
    this.lanes.add(ctx.model!.name);
    const metered = ctx.metered;
    const asking =
      metered &&
      ctx.stream &&
      ctx.body !== null &&
      ctx.model!.askStreamUsage !== false &&
      takesStreamOptions(ctx.path);
    const sent = asking ? askForStreamUsage(ctx.body!) : null;
    // The rewritten body replaces the client's: one copy of a large body is held, not two.
    if (sent !== null) ctx.body = sent.body;
    this.#request = ctx.body;
    this.#streamed = new StreamedBody(ctx.req, gw.bodyLimits);
    // Sluice asked for the stream's usage: it is removed from the client's answer.
    this.reading = { stream: ctx.stream, metered, strip: sent?.strip ?? false };
    this.#useLease(ctx.lease!);
    ctx.res.on("close", this.#onClose);
  }

  /** Takes `lease` (the first, or the fallback's): its lane's name, credentials and timeouts. */
  #useLease(lease: Lease): void {
    const { ctx, gw } = this;
    this.lease = lease;
    ctx.lease = lease;
    const lane = lease.lane;
    this.lanes.add(lane);
    this.#extra["x-sluice-lane"] = lane;
    this.#extra["x-sluice-priority"] = lease.priority;
    // A lane reached as a fallback (here or by the Governor at acquire) serves its own model name.
    const body = bodyFor(ctx, this.#request, lane);
    const length = forwardedLength(body, ctx.req, gw.bodyLimits.maxBodyBytes);
    const headers = gw.upstreams.requestHeaders(ctx.req.headers, lane, length, ctx.id);
    // A compressed answer hides its usage: a metered call's answer comes as it is (identity).
    if (this.reading.metered) delete headers["accept-encoding"];
    this.#sent = { body, streamed: this.#streamed, headers, timeouts: gw.upstreams.timeouts(lane) };
  }

  /** Sends an attempt to the lease's pod. */
  send(): void {
    this.#attempt = new Attempt(this, this.lease.pod!, this.#sent);
    this.#attempt.send();
  }

  /** The client went away before its answer was complete: abort the upstream request. */
  readonly #onClose = (): void => {
    if (this.ctx.res.writableFinished) return;
    this.clientGone = true;
    this.#attempt?.abort(CLIENT_GONE);
    // A re-dispatch waiting for a pod has no one to answer any more: give it up. (A fallback
    // lease being waited for is given up by the request's own abort signal.)
    if (this.waiting) this.lease.release();
  };

  holds(pod: string, status: number): boolean {
    const resendable = this.#sent.body ?? this.#streamed.taken;
    return resendable !== null && redispatchable(this.gw.models.get(this.lease.lane), pod, status);
  }

  stalled(): void {
    this.result.clientStalled = true;
    this.gw.metrics.clientStalled(this.lease.lane);
  }

  answered(attempt: Attempt, answer: ForwardedAnswer): void {
    const { result } = this;
    result.usage = answer.end(this.ctx.promptTokens);
    result.bytes = answer.tap.bytes;
    const status = result.status;
    if (OVERLOAD.has(status) || status === 429) {
      result.overloadStatus = status;
      this.#record({ pod: attempt.pod, cause: "status", status });
      this.lease.failed({ status, headers: attempt.responseHeaders ?? undefined });
    } else if (status >= 500) {
      this.lease.failed(status);
    } else {
      // The token budgets settle with what the call really used (usage.ts: `settledUsage`).
      this.lease.succeeded(settledUsage(result.usage, answer.tap, this.ctx.promptTokens));
    }
    this.#finish();
  }

  overloaded(attempt: Attempt, held: HeldAnswer): void {
    void this.#afterOverload(attempt, held).catch(this.#failed);
  }

  failed(attempt: Attempt, error: Error): void {
    void this.#onError(attempt, error).catch(this.#failed);
  }

  async #onError(attempt: Attempt, error: Error): Promise<void> {
    if (this.clientGone || this.result.clientStalled) return this.#gone();
    // The client's streamed body broke a bound (413/408): the client's fault, not the pod's.
    const own = error instanceof HttpError ? error : (error as { cause?: unknown }).cause;
    if (own instanceof HttpError) {
      this.lease.release();
      return this.#failed(own);
    }
    const failure = attemptError(error, attempt.started, attempt.request.timeouts);
    // A "not started" answer whose body was cut (by us past the bound, or by the pod): its status
    // already said the pod did not run the call.
    const held = attempt.held;
    if (held !== null) {
      held.incomplete ??= failure.detail;
      return this.#afterOverload(attempt, held);
    }
    if (failure.kind === "local") {
      // Never sent, and not the pod's doing: nothing to tell its breaker.
      this.gw.log.error(
        { request_id: this.ctx.id, pod: attempt.pod, err: failure.detail },
        "upstream call not sent",
      );
      this.lease.release({ sent: false });
    } else if (failure.kind === "not_started") {
      this.#record({ pod: attempt.pod, cause: failure.cause, detail: failure.detail });
      // The pod never took it (congestion for the pod; token reservations refunded): another
      // pod, or the fallback, may take it.
      if (await this.#elsewhere(NEVER_TAKEN)) return;
    } else {
      this.#record({ pod: attempt.pod, cause: failure.cause, detail: failure.detail });
      // A call the pod may have run is never sent again. The lease hears the error itself: a
      // timeout is a failure for the breaker, a reset congestion (outcome.ts).
      this.lease.failed(error);
    }
    this.result.error = failure.detail;
    if (this.ctx.res.headersSent) {
      // Mid-answer there is nothing left to say: cut it, so it cannot pass for complete.
      this.ctx.res.destroy();
      return this.#finish();
    }
    this.#answer(failure.status, failure.code, failure.message);
  }

  async #afterOverload(attempt: Attempt, held: HeldAnswer): Promise<void> {
    this.result.overloadStatus = held.status;
    const detail = held.incomplete;
    this.#record({ pod: attempt.pod, cause: "status", status: held.status, ...(detail ? { detail } : {}) });
    if (await this.#elsewhere({ status: held.status, headers: held.headers })) return;
    // Nowhere else to go: the pod's own answer (the lease already heard the refusal).
    this.result.bytes = held.send(this.ctx.res, this.answerHeaders(), this.lease.lane);
    this.#finish();
  }

  /**
   * The attempt never started: send the call on where the retry policy says (redispatch.ts).
   * True when it went on (or the client left and it ended); false when it has nowhere to go and
   * the lease has ended with `failure`.
   */
  async #elsewhere(failure: FailureInput): Promise<boolean> {
    if (this.#request === null && this.#streamed.taken === null) {
      this.lease.failed(failure); // a body streamed through cannot be sent twice
      return false;
    }
    const next = await redispatch(this, failure);
    if (next === null && !this.clientGone) return false;
    if (next !== null && next !== this.lease) this.#useLease(next);
    if (this.clientGone) this.#gone();
    else this.send();
    return true;
  }

  /** Appends one failed attempt for the metrics and the log line (never the client). */
  #record(failure: UpstreamFailure): void {
    if (this.ctx.failures === null) this.ctx.failures = [failure];
    else this.ctx.failures.push(failure);
  }

  /** The headers sluice adds to an answer (with token or request budgets, their numbers). */
  answerHeaders(): Record<string, string | number> {
    this.#extra["x-sluice-queue-ms"] = Math.round(this.lease.queuedMs);
    const limits = this.gw.governor.rateLimits(this.lease.lane, this.lease.priority, this.ctx.claim?.key);
    if (limits.length > 0) Object.assign(this.#extra, rateLimitHeaders(limits));
    return this.#extra;
  }

  #answer(status: number, code: UpstreamErrorCode, message: string): void {
    this.result.status = status;
    sendUpstreamError(this.ctx.res, status, code, message, this.lease.lane, this.answerHeaders());
    this.#finish();
  }

  /** The client left: a client abort says nothing about the pod. */
  #gone(): void {
    this.result.clientGone = true;
    this.lease.release();
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
