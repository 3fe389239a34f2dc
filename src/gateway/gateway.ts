/**
 * `sluice serve`: the HTTP gateway. This file is the shell around the request path: the
 * node:http server and its timeouts, routing (model calls to the phases in `pipeline.ts`, the
 * rest to the admin routes), drain and close, and building the parts the phases share.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Logger, pino } from "pino";
import { governorOptions } from "../config/governor-options.js";
import type { GatewayConfig, ModelConfig } from "../config/schema.js";
import type { Clock } from "../core/clock.js";
import { ConfigError } from "../core/errors.js";
import { loadTokenizer } from "../estimate/estimate.js";
import { Governor } from "../governor/governor.js";
import { logBreakerChanges } from "../metrics/breaker-log.js";
import { PrometheusMetrics } from "../metrics/prometheus.js";
import { redactStoreUrl } from "../store/redis/connection.js";
import { RedisStore } from "../store/redis/redis-store.js";
import { Authenticator } from "./auth.js";
import { BufferBudget } from "./buffer-budget.js";
import { type GatewayParts, RequestContext } from "./context.js";
import { CountedResponse } from "./counted-response.js";
import { HttpError, sendJson } from "./http-error.js";
import { meteredModels } from "./metered.js";
import { onPacingStart } from "./pacing.js";
import { resolveTarget } from "./paths.js";
import { runPhases } from "./pipeline.js";
import { flushRefusals } from "./refusal-log.js";
import { sendError } from "./reply.js";
import { isDashboardPath, serveDashboard } from "./routes/dashboard.js";
import { readiness, serveReadyz } from "./routes/health.js";
import { serveMetrics } from "./routes/metrics.js";
import { isModelsPath, serveModels } from "./routes/models.js";
import { serveLanes, TelemetryStreams } from "./routes/telemetry.js";
import { SaturationPoller } from "./saturation.js";
import { ShadowLane } from "./shadow.js";
import { Upstreams } from "./upstreams.js";

/** Log lines gather up to this many bytes before a write(2)… */
const LOG_BATCH_BYTES = 4096;
/** …and wait at most this long (ms): a line is seen within a tenth of a second. */
const LOG_FLUSH_MS = 100;

export interface GatewayOptions {
  config: GatewayConfig;
  /** Where request lines go. **Default:** pino to stdout at `config.log.level`. */
  logger?: Logger;
  /** Environment holding upstream credentials. **Default:** `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The Governor's clock. **Default:** the system clock. */
  clock?: Clock;
}

export class Gateway {
  readonly governor: Governor;
  readonly metrics: PrometheusMetrics;
  readonly server: Server;
  /** What the phases share: `draining` changes, and `reload` swaps the config's parts in place. */
  readonly #parts: GatewayParts;
  #config: GatewayConfig;
  readonly #clock: Clock | undefined;
  /** The models and shadow lanes of the config in force (the same maps as in `#parts`, refilled by `reload`). */
  readonly #models = new Map<string, ModelConfig>();
  readonly #shadows = new Map<string, ShadowLane>();
  readonly #metered = new Set<string>();
  /** Unix seconds each model was first served (`GET /v1/models`' `created`). */
  readonly #created = new Map<string, number>();
  #listening = false;
  readonly #logFromConfig: boolean;
  readonly #upstreams: Upstreams;
  readonly #streams: TelemetryStreams;
  #poller: SaturationPoller;
  /** Breaker transitions logged at warn (issue 8: a dead pod is never silent). */
  readonly #breakerLog: Disposable;
  /** Stops logging pacing's start (a retry storm: pacing.ts). */
  readonly #pacingLog: () => void;

  /** The Redis store in fleet mode, else null (the Governor's own memory store). */
  readonly #store: RedisStore | null;

  constructor(options: GatewayOptions) {
    const config = options.config;
    this.#config = config;
    this.#clock = options.clock;
    this.#logFromConfig = options.logger === undefined;
    // Asynchronous, batched writes: a line per request written at once is one write(2) per
    // request — 9 % of the gateway's busy time under a queued storm when each was synchronous
    // (bench:gateway (d)-8× profile), still 11 % asynchronous (issue 26, wrk -c128 profile: at
    // ~300 lines/s each write is done before the next line comes, so nothing batched). Lines
    // now gather up to LOG_BATCH_BYTES and wait at most LOG_FLUSH_MS; pino flushes what is
    // pending when the process exits.
    const log =
      options.logger ??
      pino(
        { level: config.log.level },
        pino.destination({ dest: 1, sync: false, minLength: LOG_BATCH_BYTES, periodicFlush: LOG_FLUSH_MS }),
      );
    // Fleet mode: every budget shared with the other replicas through Redis (started by listen()).
    this.#store = config.store.kind === "redis" ? fleetStore(config) : null;
    const governor = new Governor(governorOptions(config, options.clock, this.#store ?? undefined));
    this.governor = governor;
    const models = this.#models;
    const shadows = this.#shadows;
    // Shadow lanes' governor refusals are not refusals: the gateway counts them as would-refuse.
    const metrics = new PrometheusMetrics(governor, {
      shadow: (lane) => shadows.has(lane),
      isLane: (lane) => models.has(lane),
    });
    this.metrics = metrics;
    this.#store?.onError(() => metrics.storeError());
    this.#fillModels(config);
    this.#breakerLog = logBreakerChanges(governor, log);
    this.#pacingLog = onPacingStart((s) =>
      log.warn(
        {
          utilization: Number(s.utilization.toFixed(2)),
          early_retries: s.earlyRetries,
          sample_ms: s.sampleMs,
        },
        "retry storm: refusals to early retries are paced",
      ),
    );
    this.#streams = new TelemetryStreams(governor);
    this.#upstreams = new Upstreams(config.models, options.env ?? process.env);
    const { maxBufferedBytes, maxBodyBytes, bodyTimeoutMs } = config.admission;
    this.#parts = {
      config,
      governor,
      metrics,
      log,
      auth: Authenticator.of(config),
      upstreams: this.#upstreams,
      models,
      metered: this.#metered,
      shadows,
      buffers: new BufferBudget(maxBufferedBytes),
      bodyLimits: { maxBodyBytes, bodyTimeoutMs },
      draining: false,
    };
    this.#poller = new SaturationPoller(config.models, governor, log);
    this.server = createServer(
      {
        // Counts the body bytes each answer sends, for settle's log line.
        ServerResponse: CountedResponse,
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
    // Expect: 100-continue: admission decides before the client sends the body.
    this.server.on("checkContinue", (req, res) => void this.handle(req, res, true));
  }

  /** Starts listening; resolves with the bound URL. */
  async listen(port = this.#config.listen.port, host = this.#config.listen.host): Promise<string> {
    await this.#store?.start();
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        resolve();
      });
    });
    this.#poller.start();
    this.#listening = true;
    const a = this.server.address() as AddressInfo;
    return `http://${a.family === "IPv6" ? `[${a.address}]` : a.address}:${a.port}`;
  }

  /**
   * Drains (SIGTERM): stop admitting (503 `draining`), let what is admitted finish for at most
   * `deadlineMs`, then cut what is still running (its client connection closed, its pod call
   * aborted) and close. Resolves with the number of requests cut (0 when everything finished).
   *
   * @param deadlineMs **Default:** `admission.drain_timeout_s`.
   */
  async drain(deadlineMs = this.#config.admission.drainTimeoutMs): Promise<number> {
    this.#parts.draining = true;
    this.#streams.closeAll();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(resolve, deadlineMs, false);
    });
    const idle = await Promise.race([this.governor.whenIdle().then(() => true), late]);
    clearTimeout(timer);
    const cut = idle ? 0 : this.governor.admitted;
    if (!idle) {
      // A closed client connection aborts its call's pod request (dispatch's close handler);
      // destroying the pools then aborts any pod request left without a client.
      this.server.closeAllConnections();
      await this.#upstreams.destroy();
    }
    await this.close();
    return cut;
  }

  /** Closes at once: listener, idle connections, upstream pools, timers. */
  async close(): Promise<void> {
    this.#parts.draining = true;
    this.#poller.stop();
    this.#streams.closeAll();
    this.metrics.close();
    flushRefusals(this.#parts.log);
    this.#breakerLog[Symbol.dispose]();
    this.#pacingLog();
    this.governor.close();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    setTimeout(() => this.server.closeAllConnections(), 1000).unref();
    await closed;
    await this.#upstreams.close();
    await this.#store?.close();
  }

  /**
   * Routes one request: model calls to the phases, `/v1/models` to the list, anything else to the
   * admin routes. Routing and forwarding use the path with its dot segments resolved (`paths.ts`);
   * a path that resolves outside the route its prefix names is 400 before anything is counted.
   */
  handle(req: IncomingMessage, res: ServerResponse, expectContinue = false): Promise<void> {
    let path: string;
    let url: string;
    try {
      const target = resolveTarget(req.url ?? "/", this.#destination);
      path = target.path;
      url = target.query === "" ? path : path + target.query;
    } catch (error) {
      sendError(res, error, "-", this.#parts.log, this.governor);
      return Promise.resolve();
    }
    if (path.startsWith("/v1/")) {
      if (isModelsPath(path)) return this.#listModels(req, res, path, expectContinue);
      return runPhases(new RequestContext(req, res, url, undefined, expectContinue), this.#parts);
    }
    for (const route of this.#config.routes) {
      if (path.startsWith(route.match)) {
        return runPhases(new RequestContext(req, res, url, route.model, expectContinue), this.#parts);
      }
    }
    if (expectContinue) res.writeContinue();
    return this.#admin(req, res, url);
  }

  /** Where a path goes: `/v1/`, the first route whose prefix it has, or the admin routes (null). */
  readonly #destination = (path: string): string | null => {
    if (path.startsWith("/v1/")) return "/v1/";
    for (const route of this.#config.routes) if (path.startsWith(route.match)) return route.match;
    return null;
  };

  /** `GET /v1/models[/{id}]`: answered here, behind the same auth as model calls. */
  async #listModels(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    expectContinue: boolean,
  ): Promise<void> {
    try {
      this.#parts.auth.authenticate(req);
      if (expectContinue) res.writeContinue();
      serveModels(req, res, path, this.#models, (m) => this.#created.get(m) ?? 0);
    } catch (error) {
      sendError(res, error, "-", this.#parts.log, this.governor);
    }
  }

  async #admin(req: IncomingMessage, res: ServerResponse, url: string): Promise<void> {
    const path = url.split("?", 1)[0];
    try {
      if (path === "/healthz") return sendJson(res, 200, { ok: true });
      if (path === "/readyz") return this.#readyz(res);
      if (req.method !== "GET" && req.method !== "HEAD") {
        throw new HttpError(405, "method_not_allowed", `${req.method} is not allowed on ${path}`);
      }
      this.#parts.auth.authorizeAdmin(req);
      if (path === "/metrics") return await serveMetrics(res, this.metrics);
      if (path === "/api/telemetry/lanes") return serveLanes(res, this.governor);
      if (path === "/api/telemetry/stream") {
        this.#streams.serve(req, res);
        return;
      }
      if (isDashboardPath(path)) return await serveDashboard(req, res, path);
      throw new HttpError(404, "not_found", `no route for ${path}; model calls go to /v1/…`);
    } catch (error) {
      sendError(res, error, "-", this.#parts.log, this.governor);
    }
  }

  #readyz(res: ServerResponse): void {
    serveReadyz(res, readiness(this.governor.snapshot(), this.#config.models, this.#parts.draining));
  }

  /**
   * Applies a new config to the running gateway without dropping a call (`sluice serve` on SIGHUP):
   * limits, keys, pods and models apply to the live lanes (`Governor.reconfigure`), and the models,
   * routes, client and admin keys, shadow state, body bounds and upstream pools are swapped in
   * place. A call in flight finishes where it is, with the pool it has (a replaced pool closes once
   * its calls are done); a call that arrives after this returns sees only the new config.
   *
   * @throws ConfigError when the new config changes what only a restart can (`listen`, `store`) or
   *   the Governor refuses it; nothing has changed then.
   */
  reload(config: GatewayConfig): void {
    refuseRestartOnly(this.#config, config);
    // Validates before it changes anything, so it goes first: after it nothing here throws.
    this.governor.reconfigure(governorOptions(config, this.#clock, this.#store ?? undefined));
    this.#config = config;
    const parts = this.#parts;
    parts.config = config;
    this.#fillModels(config);
    parts.auth = Authenticator.of(config);
    const { maxBufferedBytes, maxBodyBytes, bodyTimeoutMs, headerTimeoutMs } = config.admission;
    parts.buffers.limit = maxBufferedBytes; // one budget: bodies being read charge it across a reload
    parts.bodyLimits = { maxBodyBytes, bodyTimeoutMs };
    this.server.headersTimeout = headerTimeoutMs;
    // `log.level` is the config's only for the logger built from it; a logger passed in keeps its own.
    if (this.#logFromConfig) parts.log.level = config.log.level;
    this.#upstreams.update(config.models);
    this.#poller.stop();
    this.#poller = new SaturationPoller(config.models, this.governor, parts.log);
    if (this.#listening) this.#poller.start();
    // New lanes and pods get their refusal and failure series at 0, as at start.
    this.metrics.startSeries();
  }

  /** Fills the model and shadow-lane maps from `config` (at start and on reload). */
  #fillModels(config: GatewayConfig): void {
    const metrics = this.metrics;
    this.#models.clear();
    this.#shadows.clear();
    this.#metered.clear();
    for (const name of meteredModels(config)) this.#metered.add(name);
    if (this.#metered.size > 0) loadTokenizer(); // at start or reload, not on a request
    const now = Math.floor(Date.now() / 1000);
    for (const m of config.models) {
      this.#models.set(m.name, m);
      if (!this.#created.has(m.name)) this.#created.set(m.name, now);
      if (m.mode === "shadow")
        this.#shadows.set(m.name, new ShadowLane(m, (code) => metrics.wouldRefuse(code, m.name)));
    }
  }
}

/**
 * Throws when `next` changes a key the running process cannot take on: the socket it listens on
 * and the store its budgets live in are set up once, at start.
 */
function refuseRestartOnly(current: GatewayConfig, next: GatewayConfig): void {
  const listen = (c: GatewayConfig) => `${c.listen.host}:${c.listen.port}`;
  if (listen(next) !== listen(current)) {
    throw new ConfigError(
      "listen",
      `${listen(current)} as at start`,
      listen(next),
      "listen changes only with a restart; the config was not reloaded",
    );
  }
  if (JSON.stringify(next.store) !== JSON.stringify(current.store)) {
    throw new ConfigError(
      "store",
      `${shownStore(current.store)} as at start`,
      shownStore(next.store),
      "store changes only with a restart; the config was not reloaded",
    );
  }
}

/** A store setting as an error may show it: a Redis URL's password hidden. */
function shownStore(store: GatewayConfig["store"]): string {
  return store.kind === "memory" ? "memory" : redactStoreUrl(store.url);
}

/** The fleet store a `store: redis://…` config asks for. */
function fleetStore(config: GatewayConfig): RedisStore {
  const { url } = config.store as { url: string };
  const f = config.fleet;
  return new RedisStore({
    url,
    prefix: f.prefix,
    leaseTtlMs: f.leaseTtlMs,
    onStoreError: f.onStoreError,
    expectedReplicas: f.expectedReplicas,
  });
}
