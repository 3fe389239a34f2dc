/**
 * `sluice serve`: the HTTP gateway. This file is the shell around the request path: the
 * node:http server and its timeouts, routing (model calls to the phases in `pipeline.ts`, the
 * rest to the admin routes), drain and close, and building the parts the phases share.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Logger, pino } from "pino";
import type { GatewayConfig, ModelConfig } from "../config/schema.js";
import type { Clock } from "../core/clock.js";
import { Governor } from "../governor/governor.js";
import { logBreakerChanges } from "../metrics/breaker-log.js";
import { PrometheusMetrics } from "../metrics/prometheus.js";
import { Authenticator } from "./auth.js";
import { BufferBudget } from "./buffer-budget.js";
import { type GatewayParts, RequestContext } from "./context.js";
import { CountedResponse } from "./counted-response.js";
import { governorOptions } from "./governor-config.js";
import { HttpError, sendJson } from "./http-error.js";
import { runPhases } from "./pipeline.js";
import { sendError } from "./reply.js";
import { readiness, serveReadyz } from "./routes/health.js";
import { serveMetrics } from "./routes/metrics.js";
import { serveLanes, TelemetryStreams } from "./routes/telemetry.js";
import { SaturationPoller } from "./saturation.js";
import { ShadowLane } from "./shadow.js";
import { Upstreams } from "./upstreams.js";

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
  /** What the phases share; `draining` is the one field that changes. */
  readonly #parts: GatewayParts;
  readonly #config: GatewayConfig;
  readonly #upstreams: Upstreams;
  readonly #streams: TelemetryStreams;
  readonly #poller: SaturationPoller;
  /** Breaker transitions logged at warn (issue 8: a dead pod is never silent). */
  readonly #breakerLog: Disposable;

  constructor(options: GatewayOptions) {
    const config = options.config;
    this.#config = config;
    const log = options.logger ?? pino({ level: config.log.level });
    const governor = new Governor(governorOptions(config, options.clock));
    this.governor = governor;
    const models = new Map<string, ModelConfig>();
    for (const m of config.models) models.set(m.name, m);
    const shadows = new Map<string, ShadowLane>();
    // Shadow lanes' governor refusals are not refusals: the gateway counts them as would-refuse.
    const metrics = new PrometheusMetrics(governor, {
      shadow: (lane) => shadows.has(lane),
      isLane: (lane) => models.has(lane),
    });
    this.metrics = metrics;
    for (const m of config.models) {
      if (m.mode === "shadow")
        shadows.set(m.name, new ShadowLane(m, (code) => metrics.wouldRefuse(code, m.name)));
    }
    this.#breakerLog = logBreakerChanges(governor, log);
    this.#streams = new TelemetryStreams(governor);
    this.#upstreams = new Upstreams(config.models, options.env ?? process.env);
    const { maxBufferedBytes, maxBodyBytes, bodyTimeoutMs } = config.admission;
    this.#parts = {
      config,
      governor,
      metrics,
      log,
      auth: new Authenticator(config.auth.keys, config.admin.keys, config.auth.open),
      upstreams: this.#upstreams,
      models,
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
    this.#parts.draining = true;
    this.#streams.closeAll();
    await this.governor.whenIdle();
    await this.close();
  }

  /** Closes at once: listener, idle connections, upstream pools, timers. */
  async close(): Promise<void> {
    this.#parts.draining = true;
    this.#poller.stop();
    this.#streams.closeAll();
    this.metrics.close();
    this.#breakerLog[Symbol.dispose]();
    this.governor.close();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    setTimeout(() => this.server.closeAllConnections(), 1000).unref();
    await closed;
    await this.#upstreams.close();
  }

  /** Routes one request: model calls to the phases, anything else to the admin routes. */
  handle(req: IncomingMessage, res: ServerResponse, expectContinue = false): Promise<void> {
    const url = req.url ?? "/";
    if (url.startsWith("/v1/")) {
      return runPhases(new RequestContext(req, res, url, undefined, expectContinue), this.#parts);
    }
    for (const route of this.#config.routes) {
      if (url.startsWith(route.match)) {
        return runPhases(new RequestContext(req, res, url, route.model, expectContinue), this.#parts);
      }
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
      this.#parts.auth.authorizeAdmin(req);
      if (path === "/metrics") return await serveMetrics(res, this.metrics);
      if (path === "/api/telemetry/lanes") return serveLanes(res, this.governor);
      if (path === "/api/telemetry/stream") {
        this.#streams.serve(req, res);
        return;
      }
      throw new HttpError(404, "not_found", `no route for ${path}; model calls go to /v1/…`);
    } catch (error) {
      sendError(res, error, "-", this.#parts.log, this.governor);
    }
  }

  #readyz(res: ServerResponse): void {
    serveReadyz(res, readiness(this.governor.snapshot(), this.#config.models, this.#parts.draining));
  }
}
