/**
 * `sluice serve`: the HTTP gateway (DESIGN §3). One counted path for every proxied request,
 * run as phases that stop at the first reply (STYLE G13):
 *
 *   authenticate → pre-body admission → read body | stream through → parse → wait → dispatch → settle
 *
 * Admission runs before any `'data'` listener is attached, so a refused upload is never read.
 * See docs/lifecycle.md for the tree of steps and their refusal statuses.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Logger, pino } from "pino";
import type { GatewayConfig, ModelConfig } from "../config/schema.js";
import type { Clock } from "../core/clock.js";
import { isSluiceError, type SluiceError } from "../core/errors.js";
import type { Lease } from "../core/lease.js";
import { type Priority, rankOf } from "../core/priority.js";
import { Governor } from "../governor.js";
import { PrometheusMetrics } from "../metrics/prometheus.js";
import { Authenticator, type Caller } from "./auth.js";
import { BufferBudget, GatewayBound } from "./bounds.js";
import { GATEWAY_GROUP, governorOptions } from "./governor-config.js";
import { HttpError, sendHttpError, sendJson } from "./http-error.js";
import { type DispatchResult, dispatch } from "./phases/dispatch.js";
import { parseRequestBody } from "./phases/parse.js";
import { checkDeclaredLength, readBody } from "./phases/read-body.js";
import { sendRefusal } from "./refusal.js";
import { serveMetrics } from "./routes/metrics.js";
import { serveLanes, TelemetryStreams } from "./routes/telemetry.js";
import { SaturationPoller } from "./saturation.js";
import { ShadowLease } from "./shadow.js";
import { Upstreams } from "./upstreams.js";

export interface GatewayOptions {
  config: GatewayConfig;
  /** Where request lines go. **Default:** pino to stdout at `config.log.level`. */
  logger?: Logger;
  /** Environment holding upstream credentials. **Default:** `process.env`. */
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
}

/** How long a refused upload is discarded before the socket is closed (DESIGN §3.1 step 2). */
const DISCARD_MS = 2000;
const DISCARD_BYTES = 1 << 20;
/** Declared bodies up to this size are read and dropped after a pre-body refusal (keep-alive kept). */
const SMALL_BODY_BYTES = 16 * 1024;

export class Gateway {
  readonly governor: Governor;
  readonly metrics: PrometheusMetrics;
  readonly server: Server;
  readonly #config: GatewayConfig;
  readonly #log: Logger;
  readonly #auth: Authenticator;
  readonly #upstreams: Upstreams;
  readonly #models = new Map<string, ModelConfig>();
  readonly #buffers: BufferBudget;
  readonly #streams: TelemetryStreams;
  readonly #poller: SaturationPoller;
  readonly #bound: GatewayBound;
  #draining = false;
  /** Shadow mode: calls let through beyond what enforce mode would have run at once, per lane. */
  readonly #shadowOver = new Map<string, number>();

  constructor(options: GatewayOptions) {
    const config = options.config;
    this.#config = config;
    this.#log = options.logger ?? pino({ level: config.log.level });
    this.governor = new Governor(governorOptions(config, options.clock));
    // Shadow lanes' governor refusals are not refusals: the gateway counts them as would-refuse.
    this.metrics = new PrometheusMetrics(this.governor, {
      shadow: (lane) => this.#models.get(lane)?.mode === "shadow",
    });
    this.#streams = new TelemetryStreams(this.governor);
    for (const m of config.models) this.#models.set(m.name, m);
    this.#auth = new Authenticator(config.auth.keys, config.admin.keys, config.auth.open);
    this.#upstreams = new Upstreams(config.models, options.env ?? process.env, {
      headersTimeoutMs: 300_000,
      bodyTimeoutMs: 300_000,
    });
    this.#buffers = new BufferBudget(config.admission.maxBufferedBytes);
    const { maxConcurrency, maxQueued } = config.admission;
    this.#bound = new GatewayBound(maxConcurrency, maxQueued, () =>
      this.governor.groupInflight(GATEWAY_GROUP),
    );
    this.#poller = new SaturationPoller(config.models, this.governor, this.#log);
    this.server = createServer(
      {
        // Slowloris: headers must arrive within header_timeout_s. Node checks that only every
        // connectionsCheckingInterval (30 s by default), so check often enough to mean it.
        headersTimeout: config.admission.headerTimeoutMs,
        connectionsCheckingInterval: Math.max(50, Math.min(1000, config.admission.headerTimeoutMs / 4)),
        // Node's whole-request timeout would also count time a streamed-through body waits in
        // the queue; the body phases enforce body_timeout_s from when they start reading.
        requestTimeout: 0,
        keepAliveTimeout: 5000,
      },
      (req, res) => void this.handle(req, res),
    );
    // Expect: 100-continue: admission decides before the client sends the body (§3.1 step 2).
    this.server.on("checkContinue", (req, res) => void this.handle(req, res, true));
  }

  /** Starts listening; resolves with the bound URL. */
  async listen(port = this.#config.listen.port, host = this.#config.listen.host): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        resolve();
      });
    });
    this.#poller.start();
    const a = this.server.address() as AddressInfo;
    return `http://${a.family === "IPv6" ? `[${a.address}]` : a.address}:${a.port}`;
  }

  /**
   * Drains (SIGTERM): stop admitting (503 `draining`), let what is admitted finish, then close.
   * Resolves when nothing is left.
   */
  async drain(): Promise<void> {
    this.#draining = true;
    this.#streams.closeAll();
    await this.#bound.whenIdle();
    await this.close();
  }

  /** Closes at once: listener, idle connections, upstream pools, timers. */
  async close(): Promise<void> {
    this.#draining = true;
    this.#poller.stop();
    this.#streams.closeAll();
    this.metrics.close();
    this.governor.close();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    setTimeout(() => this.server.closeAllConnections(), 1000).unref();
    await closed;
    await this.#upstreams.close();
  }

  /** Routes one request. */
  async handle(req: IncomingMessage, res: ServerResponse, expectContinue = false): Promise<void> {
    const url = req.url ?? "/";
    if (url.startsWith("/v1/")) return this.#proxy(req, res, url, undefined, expectContinue);
    for (const route of this.#config.routes) {
      if (url.startsWith(route.match)) return this.#proxy(req, res, url, route.model, expectContinue);
    }
    if (expectContinue) res.writeContinue();
    return this.#admin(req, res, url);
  }

  async #admin(req: IncomingMessage, res: ServerResponse, url: string): Promise<void> {
    const path = url.split("?", 1)[0];
    try {
      if (path === "/healthz") return sendJson(res, 200, { ok: true });
      if (path === "/readyz") return this.#readyz(res);
      if (req.method !== "GET" && req.method !== "HEAD") {
        throw new HttpError(405, "method_not_allowed", `${req.method} is not allowed on ${path}`);
      }
      this.#auth.authorizeAdmin(req);
      if (path === "/metrics") return await serveMetrics(res, this.metrics);
      if (path === "/api/telemetry/lanes") return serveLanes(res, this.governor);
      if (path === "/api/telemetry/stream") {
        this.#streams.serve(req, res);
        return;
      }
      throw new HttpError(404, "not_found", `no route for ${path}; model calls go to /v1/…`);
    } catch (error) {
      this.#fail(res, error, "-");
    }
  }

  #readyz(res: ServerResponse): void {
    const tripped = this.governor
      .snapshot()
      .pods.filter((p) => this.governor.isTripped(p.id))
      .map((p) => p.id);
    const lanesDown = this.#config.models
      .filter((m) => m.pods.every((p) => tripped.includes(p.url)))
      .map((m) => m.name);
    const ready = !this.#draining && lanesDown.length < this.#config.models.length;
    sendJson(res, ready ? 200 : 503, {
      ready,
      draining: this.#draining,
      tripped_pods: tripped,
      lanes_down: lanesDown,
    });
  }

  async #proxy(
    req: IncomingMessage,
    res: ServerResponse,
    url: string,
    routed: string | undefined,
    expectContinue: boolean,
  ): Promise<void> {
    const id = randomUUID();
    const started = performance.now();
    let caller: Caller | undefined;
    let lane = routed ?? headerOf(req, "x-sluice-model");
    let priority: Priority = "default";
    let lease: Lease | undefined;
    let result: DispatchResult | undefined;
    let counted = false;
    let bodyBytes = 0;
    let refused: SluiceError | HttpError | undefined;
    // Created only for a call that has to wait: most calls are granted at once.
    let abort: AbortController | undefined;
    let clientGone = false;
    const onClose = () => {
      if (res.writableFinished) return;
      clientGone = true;
      abort?.abort(new Error("client disconnected"));
    };
    res.on("close", onClose);
    try {
      // 1. authenticate
      caller = this.#auth.authenticate(req);
      if (this.#draining)
        throw new HttpError(503, "draining", "the gateway is draining; retry on another replica");
      priority = requestedPriority(req, caller);
      // 2. pre-body admission: gateway, key, lane
      if (lane !== undefined && !this.#models.has(lane))
        throw unknownModel(lane, routed === undefined ? "header:x-sluice-model" : "route");
      const mode = lane !== undefined ? this.#models.get(lane)!.mode : this.#config.admission.mode;
      const early = this.#preBody(lane, priority, caller);
      if (early !== undefined) {
        if (mode === "enforce") refused = early;
        if (mode === "enforce")
          return this.#refuseBeforeBody(req, res, early, lane, id, priority, expectContinue);
        this.metrics.wouldRefuse(early.code);
      }
      this.#bound.take();
      counted = true;
      if (expectContinue) res.writeContinue();
      checkDeclaredLength(req, this.#config.admission.maxBodyBytes);
      // 3–4. read and parse the body, unless the lane is known and it can stream straight through
      let body: Buffer | null = null;
      let stream = false;
      let tokens = 0;
      if (lane === undefined) {
        body = await readBody(
          req,
          this.#config.admission.maxBodyBytes,
          this.#buffers,
          this.#config.admission.bodyTimeoutMs,
        );
        bodyBytes = body.length;
        const parsed = parseRequestBody(body, req.headers["content-type"]);
        lane ??= parsed.model;
        if (!this.#models.has(lane)) throw unknownModel(lane, "body.model");
        stream = parsed.stream;
        tokens = parsed.promptTokensEstimate + (parsed.maxTokens ?? 0);
      }
      const model = this.#models.get(lane)!;
      // 5. wait for every budget on the path
      const key = caller.key?.id;
      lease =
        model.mode === "enforce"
          ? this.governor.tryAcquire(model.name, { priority, ...(key ? { key } : {}) })
          : undefined;
      if (lease === undefined && !clientGone) {
        // Under overload most calls that miss the fast path are refused: say so without the
        // AbortController, promise and thrown error that waiting needs (the refusal is counted).
        const refusal =
          model.mode === "enforce"
            ? this.governor.check(model.name, { priority, ...(key ? { key } : {}) })
            : undefined;
        if (refusal !== undefined) throw refusal;
        abort = new AbortController();
        lease = await this.#wait(model, priority, caller, tokens, abort.signal);
      }
      if (lease === undefined) return; // client left while queued
      // 6. dispatch and stream back
      result = await dispatch(this.#upstreams, {
        req,
        res,
        lease,
        model: lease.lane, // the fallback model when the first choice was tripped
        path: url,
        body,
        limits: {
          maxBodyBytes: this.#config.admission.maxBodyBytes,
          bodyTimeoutMs: this.#config.admission.bodyTimeoutMs,
        },
        stream,
        extraHeaders: {
          "x-sluice-request-id": id,
          "x-sluice-lane": lease.lane,
          "x-sluice-priority": lease.priority,
        },
      });
    } catch (error) {
      // The metrics count each refusal object once, whether the governor reported it or not.
      if (error instanceof HttpError || isSluiceError(error)) refused = error;
      this.#fail(res, error, id, lane, priority);
    } finally {
      res.off("close", onClose);
      lease?.release();
      if (counted) this.#bound.give();
      this.#buffers.used -= bodyBytes;
      // 7. settle: one line per request, metrics
      this.#settle(id, caller, lane, priority, lease, result, refused, res.statusCode, started);
    }
  }

  /** Pre-body admission: the gateway bound, then the key and lane bounds when known. */
  #preBody(lane: string | undefined, priority: Priority, caller: Caller): SluiceError | undefined {
    const full = this.#bound.refusal();
    if (full !== undefined) return full;
    const key = caller.key?.id;
    if (lane !== undefined) return this.governor.check(lane, { priority, ...(key ? { key } : {}) });
    return key !== undefined ? this.governor.checkKey(key) : undefined;
  }

  async #wait(
    model: ModelConfig,
    priority: Priority,
    caller: Caller,
    tokens: number,
    signal: AbortSignal,
  ): Promise<Lease | undefined> {
    const key = caller.key?.id;
    const opts = { priority, tokens, signal, ...(key ? { key } : {}) };
    if (model.mode === "enforce") {
      try {
        // All pods tripped and no fallback: say so at once (503 upstream_unavailable, §3.2).
        return await this.governor.acquire(model.name, { ...opts, failFast: true });
      } catch (error) {
        if (signal.aborted) return undefined;
        throw error;
      }
    }
    // Shadow: never wait, never refuse; count what enforce mode would have refused.
    try {
      return await this.governor.acquire(model.name, { ...opts, wait: false });
    } catch (error) {
      if (!isSluiceError(error)) throw error;
      const over = (this.#shadowOver.get(model.name) ?? 0) + 1;
      this.#shadowOver.set(model.name, over);
      if (error.code !== "queue_full" || over > model.queueLimit) this.metrics.wouldRefuse(error.code);
      return new ShadowLease(model, () =>
        this.#shadowOver.set(model.name, (this.#shadowOver.get(model.name) ?? 1) - 1),
      );
    }
  }

  /** A refusal before the body: 429 + Connection: close, then discard the upload for a bounded time. */
  #refuseBeforeBody(
    req: IncomingMessage,
    res: ServerResponse,
    error: SluiceError,
    lane: string | undefined,
    id: string,
    priority: Priority,
    expectContinue: boolean,
  ): void {
    const numbers = lane ? this.#laneNumbers(lane) : undefined;
    // A small declared body is cheaper to drop than the connection: a client retrying after a
    // 429 keeps its keep-alive connection instead of paying a new TCP handshake per attempt.
    // Uploads (large, chunked, or waiting for 100 Continue) are never read: Connection: close.
    const declared = Number(req.headers["content-length"] ?? 0);
    if (!expectContinue && req.headers["transfer-encoding"] === undefined && declared <= SMALL_BODY_BYTES) {
      sendRefusal(res, error, numbers, id, false, priority);
      req.resume();
      return;
    }
    sendRefusal(res, error, numbers, id, true, priority);
    // Half-close: our FIN goes out after the answer; read and drop what the client still sends,
    // so it reads the 429 instead of a connection reset, but never more than a bound.
    let dropped = 0;
    const socket = req.socket;
    const timer = setTimeout(() => socket.destroy(), DISCARD_MS);
    timer.unref();
    req.on("data", (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > DISCARD_BYTES) socket.destroy();
    });
    req.on("end", () => clearTimeout(timer));
    socket.on("close", () => clearTimeout(timer));
    req.resume();
  }

  #laneNumbers(lane: string) {
    const s = this.governor.laneStatus(lane);
    return s === undefined ? undefined : { lane, ...s };
  }

  #fail(res: ServerResponse, error: unknown, id: string, lane?: string, priority?: Priority): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (isSluiceError(error)) {
      sendRefusal(res, error, lane ? this.#laneNumbers(lane) : undefined, id, false, priority);
      return;
    }
    if (error instanceof HttpError) {
      // Bad input sent before its body was read: close, so the unread bytes are not a next request.
      sendHttpError(res, error, id, !res.req.complete);
      if (!res.req.complete) res.req.resume();
      return;
    }
    this.#log.error({ err: error, request_id: id }, "unexpected gateway error");
    sendHttpError(res, new HttpError(500 as 503, "bad_request", "internal gateway error"), id, true);
  }

  #settle(
    id: string,
    caller: Caller | undefined,
    lane: string | undefined,
    priority: Priority,
    lease: Lease | undefined,
    result: DispatchResult | undefined,
    refused: SluiceError | HttpError | undefined,
    status: number,
    started: number,
  ): void {
    const seconds = (performance.now() - started) / 1000;
    if (refused !== undefined) this.metrics.refusal(refused instanceof HttpError ? refused.code : refused);
    if (result?.overloadStatus !== undefined && lease?.pod)
      this.metrics.upstreamOverload(lease.pod, result.overloadStatus);
    if (result?.usage && lane !== undefined && this.#models.has(lane)) {
      this.metrics.tokens(lane, "prompt", result.usage.promptTokens);
      this.metrics.tokens(lane, "completion", result.usage.completionTokens);
    }
    // Only configured names become label values: a client must not be able to mint series.
    const laneLabel = lane !== undefined && this.#models.has(lane) ? lane : "-";
    this.metrics.request(laneLabel, status, seconds);
    if (!this.#log.isLevelEnabled("info")) return;
    this.#log.info(
      {
        request_id: id,
        key: caller?.id,
        lane,
        priority,
        waiting_for_model_capacity_ms: lease ? Math.round(lease.queuedMs) : 0,
        pod: lease?.pod,
        status,
        reason: refused?.code,
        prompt_tokens: result?.usage?.promptTokens,
        completion_tokens: result?.usage?.completionTokens,
        bytes: result?.bytes ?? 0,
        client_gone: result?.clientGone || undefined,
        ms: Math.round(seconds * 1000),
      },
      "request",
    );
  }
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

function unknownModel(model: string, param: string): HttpError {
  return new HttpError(
    404,
    "unknown_model",
    `no model named "${model}" is configured on this gateway`,
    param,
  );
}

/** `X-Sluice-Priority`, capped at the key's `max_priority` (the answer says which class was used). */
function requestedPriority(req: IncomingMessage, caller: Caller): Priority {
  const raw = headerOf(req, "x-sluice-priority");
  let rank = raw === undefined ? 1 : rankOf(raw);
  if (rank === undefined) {
    throw new HttpError(
      400,
      "bad_request",
      `X-Sluice-Priority must be interactive, default or bulk; got "${raw}"`,
      "header:x-sluice-priority",
    );
  }
  const cap = caller.key === null ? 0 : rankOf(caller.key.maxPriority)!;
  if (rank < cap) rank = cap;
  return (["interactive", "default", "bulk"] as const)[rank]!;
}
