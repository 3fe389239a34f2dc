/**
 * One work request's life inside the sim: read the body while waiting for a slot, serve it once
 * both are ready (after the drawn service time), stream or answer, and give the slot back exactly
 * once — on completion, on a 400, or when the client goes away.
 *
 * Lean on purpose: the gateway benchmark pushes tens of thousands of requests through here, so
 * with a service time of 0 a request allocates no timer, and timers never capture closures
 * (`setTimeout(fn, ms, job)` with a static function).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  answerTokenCount,
  completionBody,
  contentKey,
  embeddingBody,
  errorBody,
  finishReasonFor,
  parseSimRequest,
  type ReplyMeta,
  replyMeta,
  SimBadRequestError,
  type SimRequest,
  SSE_DONE,
  simTokens,
  streamChunk,
  usage,
  type WorkKind,
} from "./openai.js";
import type { ResolvedSimOptions } from "./options.js";
import type { Seq, SeqScheduler, SeqState } from "./scheduler.js";

/** What a job needs from the server that owns it. */
export interface JobContext {
  /** Current options; `setProfile` replaces the object, so read it when needed, not once. */
  readonly options: ResolvedSimOptions;
  readonly scheduler: SeqScheduler;
  /** Draws the service time in ms for a request producing `outputTokens` tokens. */
  drawServiceMs(outputTokens: number): number;
  onBodyBytes(n: number): void;
  onFinished(finishReason: string, promptTokens: number, completionTokens: number): void;
  onAborted(): void;
  onBadRequest(): void;
  /** A job with an `x-sim-tenant` header ended: it completed or not, what it used, the slot-ms it held. */
  onTenantEnded(
    tenant: string,
    completed: boolean,
    promptTokens: number,
    completionTokens: number,
    slotMs: number,
  ): void;
}

const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };

/** A request on a work route, from admission to its single ending. */
export class Job implements Seq {
  state: SeqState = "new";
  prev: Seq | null = null;
  next: Seq | null = null;
  #granted = false;
  #bodyDone = false;
  /** Body chunks; null on the echo route, which only counts bytes. */
  #chunks: Buffer[] | null;
  #bytes = 0;
  #parsed: SimRequest | null = null;
  #timer: NodeJS.Timeout | null = null;
  // Streaming state, set when the stream starts.
  #tokens: string[] = [];
  #sent = 0;
  #intervalMs = 0;
  #meta: ReplyMeta | null = null;
  #finishReason = "stop";
  /** `performance.now()` at the grant; −1 before it. */
  #grantedAt = -1;

  constructor(
    readonly ctx: JobContext,
    readonly kind: WorkKind,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
  ) {
    this.#chunks = kind === "echo" ? null : [];
  }

  /** Starts reading the body and watching for the client leaving; call once, after admission. */
  begin(): void {
    this.res.once("close", () => this.#onClose());
    this.req.on("data", (chunk: Buffer) => {
      this.#bytes += chunk.length;
      this.ctx.onBodyBytes(chunk.length);
      this.#chunks?.push(chunk);
    });
    this.req.once("end", () => this.#onBodyEnd());
  }

  /** The scheduler gave this job a slot. */
  onGrant(): void {
    this.#granted = true;
    this.#grantedAt = performance.now();
    if (this.#bodyDone) this.#serve();
  }

  #onBodyEnd(): void {
    if (this.state === "done") return;
    this.#bodyDone = true;
    if (this.#chunks !== null) {
      try {
        const body = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks);
        this.#parsed = parseSimRequest(this.kind as Exclude<WorkKind, "echo">, body, this.ctx.options.model);
      } catch (e) {
        // vLLM validates before scheduling: a bad request leaves the queue (or its slot) at once.
        const err = e instanceof SimBadRequestError ? e : new SimBadRequestError(String(e));
        this.ctx.scheduler.end(this);
        this.ctx.onBadRequest();
        this.#sendJson(400, errorBody(err.message, "invalid_request_error", null, err.param));
        return;
      }
      this.#chunks = null;
    }
    if (this.#granted) this.#serve();
  }

  #serve(): void {
    const ms = this.ctx.drawServiceMs(this.#outputTokens());
    if (ms === 0) this.#respond();
    else this.#timer = setTimeout(Job.#fire, ms, this);
  }

  static #fire(job: Job): void {
    job.#timer = null;
    job.#respond();
  }

  #outputTokens(): number {
    const p = this.#parsed;
    if (p === null || this.kind === "embedding") return 0;
    return answerTokenCount(p, this.ctx.options.defaultOutputTokens);
  }

  #respond(): void {
    const p = this.#parsed;
    if (p === null) {
      this.#sendJson(200, `{"pages":1,"bytes":${this.#bytes}}`);
      this.#finish("stop", 0, 0);
    } else if (this.kind === "embedding") {
      this.#sendJson(
        200,
        embeddingBody(p.model, p.inputs, this.ctx.options.embeddingDims, p.promptTokens, p.encodingFormat),
      );
      this.#finish("stop", p.promptTokens, 0);
    } else {
      const kind = this.kind as "chat" | "completion";
      const n = this.#outputTokens();
      this.#finishReason = finishReasonFor(n, this.ctx.options.defaultOutputTokens);
      const key = contentKey(p.model, p.promptText);
      this.#meta = replyMeta(kind, p.model, key);
      this.#tokens = simTokens(key, n);
      if (p.stream) {
        this.#startStream(kind, p);
      } else {
        const body = completionBody(
          kind,
          this.#meta,
          this.#tokens.join(""),
          this.#finishReason,
          usage(p.promptTokens, n),
        );
        this.#sendJson(200, body);
        this.#finish(this.#finishReason, p.promptTokens, n);
      }
    }
  }

  #startStream(kind: "chat" | "completion", p: SimRequest): void {
    this.res.writeHead(200, SSE_HEADERS);
    // The first token goes with the role chunk: the service time was the time to first token.
    let head =
      kind === "chat"
        ? streamChunk(kind, this.#meta!, { role: "assistant", content: "" }, null, p.includeUsage)
        : "";
    const tps = this.ctx.options.tokensPerSecond;
    if (tps === 0) {
      // One write for the whole stream: the cheapest path, for benchmarks.
      while (this.#sent < this.#tokens.length) head += this.#tokenChunk();
      this.#endStream(head);
    } else {
      this.#intervalMs = (1000 / tps) * this.ctx.options.timeScale;
      this.#step(head);
    }
  }

  /** Writes `prefix` plus the next token, then schedules the one after or ends the stream. */
  #step(prefix: string): void {
    const out = this.#sent < this.#tokens.length ? prefix + this.#tokenChunk() : prefix;
    if (this.#sent < this.#tokens.length) {
      this.res.write(out);
      this.#timer = setTimeout(Job.#tick, this.#intervalMs, this);
    } else {
      this.#endStream(out);
    }
  }

  static #tick(job: Job): void {
    job.#timer = null;
    job.#step("");
  }

  #tokenChunk(): string {
    const kind = this.kind as "chat" | "completion";
    const token = this.#tokens[this.#sent++]!;
    return streamChunk(
      kind,
      this.#meta!,
      kind === "chat" ? { content: token } : token,
      null,
      this.#parsed!.includeUsage,
    );
  }

  #endStream(prefix: string): void {
    const kind = this.kind as "chat" | "completion";
    const p = this.#parsed!;
    const n = this.#tokens.length;
    const meta = this.#meta!;
    const last = streamChunk(kind, meta, kind === "chat" ? {} : "", this.#finishReason, p.includeUsage);
    // Sent even without include_usage: the gateway settles token budgets from it (DESIGN §3.1 step 7).
    const tail = streamChunk(kind, meta, null, null, p.includeUsage, usage(p.promptTokens, n));
    this.res.end(prefix + last + tail + SSE_DONE);
    this.#finish(this.#finishReason, p.promptTokens, n);
  }

  #finish(reason: string, promptTokens: number, completionTokens: number): void {
    this.ctx.scheduler.end(this);
    this.ctx.onFinished(reason, promptTokens, completionTokens);
    this.#tenantEnded(true, promptTokens, completionTokens);
  }

  /** Counts the job under its `x-sim-tenant`, when it has one (most jobs do not: nothing is read). */
  #tenantEnded(completed: boolean, promptTokens: number, completionTokens: number): void {
    const tenant = this.req.headers["x-sim-tenant"];
    if (typeof tenant !== "string") return;
    const slotMs = this.#grantedAt < 0 ? 0 : performance.now() - this.#grantedAt;
    this.ctx.onTenantEnded(tenant, completed, promptTokens, completionTokens, slotMs);
  }

  #sendJson(status: number, body: string): void {
    sendJson(this.res, status, body);
  }

  /** The response closed; before the job finished that means the client left (or the sim closed). */
  #onClose(): void {
    if (this.state === "done") return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#chunks = null;
    this.ctx.scheduler.end(this);
    this.ctx.onAborted();
    this.#tenantEnded(false, 0, 0);
  }
}

/** Writes a complete JSON answer with its length (no chunked encoding, so clients can compare bytes). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  extra?: Record<string, string>,
): void {
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...extra,
  });
  res.end(body);
}
