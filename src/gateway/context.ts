/**
 * What the request path's phases share (STYLE G13, after fastify's request/reply pair): the
 * gateway's parts, built once ({@link GatewayParts}), and one {@link RequestContext} per proxied
 * request that every phase reads and fills in turn. A phase is a plain function of the two
 * ({@link Phase}); see `pipeline.ts` for the order and docs/lifecycle.md for the tree.
 *
 * The context is a class so every request's record has one shape (one hidden class for V8), and
 * a feature a request does not use is `null`, not a flag beside a value.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { GatewayConfig, ModelConfig } from "../config/schema.js";
import type { SluiceError } from "../core/errors.js";
import type { Lease } from "../core/lease.js";
import type { Priority } from "../core/priority.js";
import type { Governor } from "../governor/governor.js";
import type { PrometheusMetrics } from "../metrics/prometheus.js";
import type { Authenticator, Caller } from "./auth.js";
import type { BufferBudget } from "./buffer-budget.js";
import type { HttpError } from "./http-error.js";
import type { JsonGuard } from "./json-guard.js";
import type { ShadowLane } from "./shadow.js";
import type { Upstreams } from "./upstreams.js";
import type { TokenUsage } from "./usage.js";

/**
 * One step of the request path. `true` hands the request on to the next phase; `false` means it
 * has ended: a reply was sent (or the client left and there is no one to answer). A phase that
 * must wait returns a promise of the same; a phase may also throw an `HttpError` or a
 * `SluiceError`, which the runner sends as the reply.
 */
export type Phase = (ctx: RequestContext, gw: GatewayParts) => boolean | Promise<boolean>;

/**
 * The gateway's parts the phases use, built once by `Gateway`. The fields that are not readonly are
 * swapped by `Gateway.reload` (SIGHUP): a phase reads them when it runs, so a call that arrives
 * after a reload sees only the new config.
 */
export interface GatewayParts {
  config: GatewayConfig;
  readonly governor: Governor;
  readonly metrics: PrometheusMetrics;
  readonly log: Logger;
  auth: Authenticator;
  readonly upstreams: Upstreams;
  /** Every configured model by name (its lane); refilled in place by a reload. */
  readonly models: ReadonlyMap<string, ModelConfig>;
  /** Models whose calls need a token estimate (a `tpm` on their path: metered.ts); refilled by a reload. */
  readonly metered: ReadonlySet<string>;
  /** The shadow-mode state of every model in shadow mode; enforce-mode models have none. */
  readonly shadows: ReadonlyMap<string, ShadowLane>;
  readonly buffers: BufferBudget;
  /** Bounds a body streamed through gets while it is forwarded. */
  bodyLimits: { readonly maxBodyBytes: number; readonly bodyTimeoutMs: number };
  /** Set by `drain()`/`close()`: new requests get 503 `draining`. */
  draining: boolean;
}

/** What the settle phase needs to know about the dispatch (filled by `phases/dispatch.ts`). */
export interface DispatchResult {
  status: number;
  bytes: number;
  usage: TokenUsage | undefined;
  /** The upstream status that counted as overload, for metrics. */
  overloadStatus: number | undefined;
  /** Set when the client went away mid-call. */
  clientGone: boolean;
  /** Set when the client accepted nothing for `stream_idle_timeout_s` and lost its call. */
  clientStalled: boolean;
  error: string | undefined;
  /** Ms from sending the attempt that answered to its answer's head (`sluice_upstream_ttfb_seconds`). */
  ttfbMs: number | undefined;
}

/** Why one upstream attempt failed (DESIGN's `upstream_failures_total` causes). */
export interface UpstreamFailure {
  /** The pod's URL. */
  readonly pod: string;
  /**
   * `refused`: connect refused; `reset`: the connection was reset or closed before a complete
   * answer; `timeout`: `upstream_timeout_s` to the headers or `stream_idle_timeout_s` between
   * chunks passed; `status`: the pod answered an overload status (429/502/503/504/529).
   */
  readonly cause: "refused" | "reset" | "timeout" | "status";
  /** The HTTP status for `status`. */
  readonly status?: number;
  /** The detail for the log only (never sent to the client): the undici error code or message. */
  readonly detail?: string;
}

/**
 * The options every Governor call of one request takes: the class asked for, the key, and once
 * parse has it, the token estimate (absent off a token budget's path).
 */
export interface Claim {
  readonly priority: Priority;
  readonly key: string | undefined;
  readonly tokens?: number;
}

/** One proxied request, from its head to its settle line. */
export class RequestContext {
  /** `X-Sluice-Request-Id`: on the answer, the upstream request and the log line. */
  readonly id: string = randomUUID();
  /** `performance.now()` at arrival, for the request's duration. */
  readonly started: number = performance.now();

  // ---- who and what (authenticate, admit, parse) ----
  /** Set by authenticate; undefined only when it refused. */
  caller: Caller | undefined = undefined;
  /**
   * The lane: named before the body (the route, or `X-Sluice-Model`) or by `body.model`. May
   * name an unknown model until admit/parse refuse it; only `model` is trusted (lane.ts).
   */
  lane: string | undefined;
  /** The lane's model once it is known to be configured: resolved once, by lane.ts's `nameLane`. */
  model: ModelConfig | null = null;
  /** Shadow-mode state of the model; null in enforce mode (and until the model is known). */
  shadow: ShadowLane | null = null;
  /** A token budget is on the model's path (metered.ts); set with `model` (lane.ts). */
  metered = false;
  /**
   * The class asked for (`X-Sluice-Priority`, default `default`). The Governor lowers it to the
   * key's `max_priority`; the class the call ran as is `lease.priority`.
   */
  priority: Priority = "default";
  /** Priority and key as the Governor takes them; set by admit (parse adds the estimate), reused by every check. */
  claim: Claim | null = null;

  // ---- what it holds (admit, read body, wait) ----
  /** Holds the Governor's admission bound (entered by admit, left by settle). */
  admitted = false;
  /** The buffered body (replayable to another pod), or null while it streams straight through. */
  body: Buffer | null = null;
  /** Bytes charged to the gateway's buffer budget, given back by settle. */
  bodyBytes = 0;
  /** The bounded scan of a buffered JSON body (its top-level `model` read on the way); null otherwise. */
  json: JsonGuard | null = null;
  /** `stream: true` in the body (SSE answer). */
  stream = false;
  /**
   * The token estimate the token budgets reserve: prompt + the output bound (or the model's
   * default); 0 off a token budget's path (those bodies may stream through: read-body.ts).
   */
  tokens = 0;
  /** The prompt's part of it (a stream that reports no usage is reconciled with this + what it streamed). */
  promptTokens = 0;
  /** The grant on the lane's path; set by wait, released by settle. */
  lease: Lease | undefined = undefined;
  /** Created only for a call that has to wait: most calls are granted at once. */
  abort: AbortController | null = null;

  // ---- how it ended (dispatch, any refusal, settle) ----
  /** The client closed its connection before the answer was complete. */
  clientGone = false;
  result: DispatchResult | undefined = undefined;
  /** The refusal sent, counted once by settle whoever sent it. */
  refused: SluiceError | HttpError | undefined = undefined;
  /**
   * Every failed upstream attempt of this call, in order (dispatch appends one per attempt that
   * failed, re-dispatched or not); settle counts each in `sluice_upstream_failures_total{pod,cause}`
   * and names them in the log line. Null until the first failure: most calls have none.
   */
  failures: UpstreamFailure[] | null = null;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    /** The request's path (dot segments resolved, `paths.ts`) and query: what is forwarded. */
    readonly path: string,
    /** The model of the `routes[]` entry that matched, if any. */
    readonly routed: string | undefined,
    /** The client sent `Expect: 100-continue`: admission answers before the body is sent. */
    readonly expectContinue: boolean,
  ) {
    this.lane = routed ?? headerOf(req, "x-sluice-model");
    res.on("close", this.onClose);
  }

  /** The connection closed: before the answer was complete, the client left. */
  readonly onClose = (): void => {
    if (this.res.writableFinished) return;
    this.clientGone = true;
    this.abort?.abort(new Error("client disconnected"));
  };
}

/** A header's value when it is one non-empty string. */
export function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === "string" && v.length > 0 ? v : undefined;
}
