/**
 * One trip of a call to one pod (issue 23: the attempt apart from the call that decides what a
 * failed one leads to). Built on undici's dispatcher handler API rather than `request()`: the
 * answer's chunks go straight from the upstream socket to the client's, with no body stream,
 * async iterator or promise per chunk, and backpressure by pausing the upstream read (STYLE: a
 * lean request path).
 *
 * The attempt knows its pod, whether undici started it, and the answer on its way: forwarded to
 * the client as it comes (`forwarded-answer.ts`), or — a status the pod's config lists as "not
 * started" (`redispatch.ts`) — held (`held-answer.ts`) while the call decides where it goes.
 * What its ending means is not its to judge: it reports the ending to its {@link AttemptOwner}
 * (`phases/dispatch.ts`), which tells the lease, re-dispatches or answers.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { Dispatcher } from "undici";
import type { DispatchResult, GatewayParts, RequestContext } from "./context.js";
import { type AnswerReading, ForwardedAnswer } from "./forwarded-answer.js";
import { HELD_TOO_LARGE, HeldAnswer } from "./held-answer.js";
import type { StreamedBody } from "./phases/read-body.js";
import type { CallTimeouts } from "./upstreams.js";

/** Why an attempt was aborted: the client went away before its answer was complete. */
export const CLIENT_GONE = new Error("client disconnected");
const CLIENT_STALLED = new Error("the client accepted nothing for stream_idle_timeout_s");

/** What an attempt sends: the call's request on the lane of the lease it runs on. */
export interface AttemptRequest {
  /** The body as sent (the fallback's model name on a fallback lane), or null: the body is `streamed`. */
  readonly body: Buffer | null;
  /** A body not buffered for the lane: taken whole if it has all arrived, else streamed through. */
  readonly streamed: StreamedBody;
  readonly headers: Record<string, string | string[]>;
  readonly timeouts: CallTimeouts;
}

/** The call an attempt belongs to: what it reads when the answer starts, and who hears its end. */
export interface AttemptOwner {
  readonly ctx: RequestContext;
  readonly gw: GatewayParts;
  /** What the settle phase is told of the dispatch (the answer's status and time to its head). */
  readonly result: DispatchResult;
  /** How the answer is read (stream, metered, the usage sluice asked for stripped). */
  readonly reading: AnswerReading;
  /** The client has gone: an attempt that starts now is aborted at once. */
  readonly clientGone: boolean;
  /** True when `pod`'s answer with `status` says it never ran the call: held, not forwarded. */
  holds(pod: string, status: number): boolean;
  /** The headers sluice adds to the answer (read when its head is written). */
  answerHeaders(): Record<string, string | number>;
  /** The pod's answer was forwarded to its end. */
  answered(attempt: Attempt, answer: ForwardedAnswer): void;
  /** A held answer was read to its end. */
  overloaded(attempt: Attempt, held: HeldAnswer): void;
  /** The attempt failed: undici's error, or ours (the client left or stalled, a body bound broken). */
  failed(attempt: Attempt, error: Error): void;
  /** The client accepted nothing for `stream_idle_timeout_s`: its call is given up. */
  stalled(): void;
}

export class Attempt implements Dispatcher.DispatchHandler {
  /** `performance.now()` when it was sent. */
  readonly #sentAt = performance.now();
  #controller: Dispatcher.DispatchController | null = null;
  /**
   * undici has started this attempt on a connected socket. A buffered body is written in the
   * same tick (undici's `writeBuffer`; the handler API passes no `onRequestSent` on), so from
   * here the pod may hold the whole request.
   */
  started = false;
  /** The answer's headers, for a 429's quota reset. */
  responseHeaders: IncomingHttpHeaders | null = null;
  /** The answer being forwarded to the client. */
  #forwarded: ForwardedAnswer | null = null;
  /** A "not started" answer being read before the call decides whether to re-dispatch. */
  held: HeldAnswer | null = null;

  constructor(
    readonly owner: AttemptOwner,
    /** The pod's URL. */
    readonly pod: string,
    readonly request: AttemptRequest,
  ) {}

  /** Sends it through the pod's keep-alive pool; the answer comes back through the callbacks below. */
  send(): void {
    const { ctx, gw } = this.owner;
    const target = gw.upstreams.target(this.pod);
    const { body, streamed, headers, timeouts } = this.request;
    target.pool.dispatch(
      {
        path: target.basePath + ctx.path,
        method: ctx.req.method as Dispatcher.HttpMethod,
        headers,
        body: body ?? streamed.body(),
        headersTimeout: timeouts.headersTimeout,
        bodyTimeout: timeouts.bodyTimeout,
      },
      this,
    );
  }

  /** Aborts it (the client left); undici then calls `onResponseError` with `reason`. */
  abort(reason: Error): void {
    this.#controller?.abort(reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    this.started = true;
    if (this.owner.clientGone) controller.abort(CLIENT_GONE);
  }

  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    const { owner } = this;
    owner.result.status = status;
    owner.result.ttfbMs = performance.now() - this.#sentAt;
    this.responseHeaders = headers;
    if (owner.holds(this.pod, status)) {
      // The pod's config says this answer means it did not run the call: read it, then
      // re-dispatch if the budget allows.
      this.held = new HeldAnswer(status, headers);
      return;
    }
    const extra = owner.answerHeaders();
    this.#forwarded = new ForwardedAnswer(
      owner.ctx.res,
      status,
      headers,
      extra,
      owner.reading,
      this.#onStalled,
    );
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const held = this.held;
    if (held !== null) {
      // Past the bound: continues in onResponseError, with the status known.
      if (!held.take(chunk)) controller.abort(HELD_TOO_LARGE);
      return;
    }
    // Backpressure: the pod is not read until the client has taken what it was sent, for at most
    // stream_idle_timeout_s (#onStalled).
    this.#forwarded!.data(chunk, controller, this.request.timeouts.bodyTimeout);
  }

  /** The client accepted nothing for stream_idle_timeout_s: its call is given up, its slot freed. */
  readonly #onStalled = (): void => {
    this.owner.stalled();
    // Continues in onResponseError (the owner: the lease released, the call's estimate kept).
    this.#controller?.abort(CLIENT_STALLED);
    this.owner.ctx.res.destroy();
  };

  onResponseEnd(): void {
    const held = this.held;
    if (held !== null) this.owner.overloaded(this, held);
    else this.owner.answered(this, this.#forwarded!);
  }

  onResponseError(_c: Dispatcher.DispatchController, error: Error): void {
    this.#forwarded?.stop();
    this.owner.failed(this, error);
  }
}
