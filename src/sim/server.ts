/**
 * An OpenAI-compatible model server that behaves like one vLLM pod under load: `maxNumSeqs`
 * requests run, the rest wait (forever by default, like vLLM), and past an optional bound it
 * answers 503/429 or refuses the connection. It is the upstream of the gateway's demo and of
 * every gateway test; `stats().maxRunningSeen` is how those tests prove a pod was never pushed
 * past its limit. With an OOM point (`oomAt`) the host goes away for a while when too many
 * sequences run at once (seed 001). node:http only, so the sim's own overhead stays small and
 * visible.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { serveInfoRoute } from "./info-routes.js";
import { Job, type JobContext, sendJson } from "./job.js";
import { type MachineMember, SimMachine } from "./machine.js";
import { renderMetrics, renderSimMetrics, simReport } from "./metrics.js";
import { errorBody, type WorkKind } from "./openai.js";
import { type ResolvedSimOptions, resolveSimOptions, type SimOptions, type SimProfile } from "./options.js";
import { Mulberry32 } from "./random.js";
import { SeqScheduler } from "./scheduler.js";
import type { SimStats, TenantStats } from "./stats.js";

// The option and stats types belong with startSim for callers that import only this module.
export type { ResolvedSimOptions, SimOptions, SimOverflow, SimProfile } from "./options.js";
export type { SimStats, TenantStats } from "./stats.js";

/** How many Authorization values `stats().authHeadersSeen` keeps. */
export const AUTH_HISTORY = 16;

/** A running simulated pod. */
export interface SimServer {
  /** `http://HOST:PORT`, no trailing slash. */
  readonly url: string;
  /** The port actually bound (useful with `port: 0`). */
  readonly port: number;
  /** The options in force (changed by `setProfile`). */
  readonly options: Readonly<ResolvedSimOptions>;
  /** Stops listening and destroys every connection; in-flight requests count as aborted. Idempotent. */
  close(): Promise<void>;
  /** A copy of the counters. */
  stats(): SimStats;
  /** What it saw, in one line for people: peaks, refusals by kind, throttles, OOM events. */
  report(): string;
  /** The machine whose memory it counts against (its own unless `options.machine` was given). */
  readonly machine: SimMachine;
  /** Zeroes the counters and restarts the peaks from the current counts; options stay. */
  resetStats(): void;
  /**
   * Changes behaviour while running (`port`, `host` and `listenBacklog` stay). Raising
   * `maxNumSeqs` grants waiters at once; lowering it lets the running excess finish. Throws
   * `ConfigError` and changes nothing when a value is invalid.
   */
  setProfile(patch: SimProfile): void;
}

/** Starts a sim listening on `opts.port` (0 = a free port). Rejects if the port is taken. */
export async function startSim(opts: SimOptions = {}): Promise<SimServer> {
  const sim = new Sim(resolveSimOptions(opts));
  await sim.listen();
  return sim;
}

const WORK_ROUTES: Record<string, WorkKind | undefined> = {
  "/v1/chat/completions": "chat",
  "/v1/completions": "completion",
  "/v1/embeddings": "embedding",
};

class Sim implements SimServer, JobContext, MachineMember {
  options: ResolvedSimOptions;
  readonly scheduler: SeqScheduler;
  readonly machine: SimMachine;
  /** Whether the machine was made for this sim alone (then `setProfile` may change its OOM point). */
  readonly #ownMachine: boolean;
  url = "";
  port = 0;
  readonly #server: Server;
  #rng: Mulberry32;
  #closing: Promise<void> | null = null;
  #received = 0;
  #completed = 0;
  #refusedConnections = 0;
  #throttled = 0;
  #overloaded = 0;
  #cutByOom = 0;
  #busyBaseMs = 0;
  /** Set while the host is down: the close of the listener, awaited before listening again. */
  #downClosed: Promise<void> | null = null;
  #aborted = 0;
  #badRequests = 0;
  #bodyBytes = 0;
  #auth: string[] = [];
  #tenants: Record<string, TenantStats> = {};
  // Metric counters are monotonic, as Prometheus expects: resetStats leaves them alone.
  readonly #success: Record<string, number> = { stop: 0, length: 0 };
  readonly #refusals = { connection: 0, "429": 0, "503": 0 };
  #promptTokens = 0;
  #generationTokens = 0;
  // One closure for the life of the server, not one per request.
  readonly #mayWait = (waiting: number): boolean =>
    this.options.overflow === "queue" || waiting < this.options.maxWaiting;

  constructor(options: ResolvedSimOptions) {
    this.options = options;
    this.#ownMachine = options.machine === undefined;
    this.machine =
      options.machine ??
      new SimMachine({ oomAt: options.oomAt, downMs: options.oomDownMs * options.timeScale });
    this.machine.join(this);
    const machine = this.machine;
    this.scheduler = new SeqScheduler(options.maxNumSeqs, {
      started: () => machine.take(),
      stopped: () => machine.give(),
    });
    this.#rng = new Mulberry32(options.seed);
    this.#server = createServer((req, res) => this.#onRequest(req, res));
  }

  listen(): Promise<void> {
    const { port, host, listenBacklog } = this.options;
    return new Promise((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen({ port, host, backlog: listenBacklog }, () => {
        this.#server.off("error", reject);
        this.port = (this.#server.address() as AddressInfo).port;
        this.url = `http://${host.includes(":") ? `[${host}]` : host}:${this.port}`;
        resolve();
      });
    });
  }

  close(): Promise<void> {
    this.#closing ??= new Promise((resolve) => {
      this.machine.leave(this);
      // While down the listener is already closed: close() then calls back with an error, and resolves all the same.
      this.#server.close(() => resolve());
      // Waiting and running requests would keep close() pending forever; cut them (their
      // 'close' handlers free their slots and clear their timers).
      this.#server.closeAllConnections();
    });
    return this.#closing;
  }

  stats(): SimStats {
    const s = this.scheduler;
    return {
      running: s.running,
      waiting: s.waiting,
      maxRunningSeen: s.maxRunningSeen,
      maxWaitingSeen: s.maxWaitingSeen,
      maxInflightSeen: s.maxInflightSeen,
      received: this.#received,
      completed: this.#completed,
      refused: this.#refusedConnections + this.#throttled + this.#overloaded,
      refusedConnections: this.#refusedConnections,
      throttled: this.#throttled,
      overloaded: this.#overloaded,
      oomEvents: this.machine.oomEvents,
      cutByOom: this.#cutByOom,
      down: this.#downClosed !== null,
      busySlotMs: s.busySlotMs() - this.#busyBaseMs,
      aborted: this.#aborted,
      badRequests: this.#badRequests,
      bodyBytesReceived: this.#bodyBytes,
      authHeadersSeen: [...this.#auth],
      tenants: Object.fromEntries(Object.entries(this.#tenants).map(([k, v]) => [k, { ...v }])),
    };
  }

  resetStats(): void {
    this.scheduler.resetPeaks();
    this.#busyBaseMs = this.scheduler.busySlotMs();
    this.#received =
      this.#completed =
      this.#refusedConnections =
      this.#throttled =
      this.#overloaded =
      this.#cutByOom =
      this.#aborted =
      this.#badRequests =
      this.#bodyBytes =
        0;
    this.#auth = [];
    this.#tenants = {};
  }

  setProfile(patch: SimProfile): void {
    const { port, host, listenBacklog } = this.options;
    const next = { ...resolveSimOptions(patch, this.options), port, host, listenBacklog };
    if (patch.seed !== undefined) this.#rng = new Mulberry32(next.seed);
    this.options = next;
    if (this.#ownMachine) {
      this.machine.oomAt = next.oomAt;
      this.machine.downMs = next.oomDownMs * next.timeScale;
    }
    this.scheduler.maxNumSeqs = next.maxNumSeqs;
    this.scheduler.pump();
  }

  drawServiceMs(outputTokens: number): number {
    const o = this.options;
    // serviceMs 0 draws nothing, so a benchmark run is not slowed by the generator either.
    const base = o.serviceMs === 0 ? 0 : o.serviceMs * this.#rng.lognormalFactor(o.jitterSigma);
    return (base + o.msPerOutputToken * outputTokens) * o.timeScale;
  }

  report(): string {
    return simReport(this.options.model, this.url, this.options.maxNumSeqs, this.stats(), this.machine);
  }

  /** The host went down (an OOM on its machine): refuse connections, cut every request held. */
  goDown(): void {
    if (this.#closing !== null || this.#downClosed !== null) return;
    this.#downClosed = new Promise((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
  }

  /** The host is back: listen again on the same port once the old listener has closed. */
  comeUp(): void {
    const closed = this.#downClosed;
    if (closed === null) return;
    void closed.then(() => this.#relisten());
  }

  #relisten(): void {
    if (this.#closing !== null) return;
    const { host, listenBacklog } = this.options;
    const retry = () => setTimeout(() => this.#relisten(), 50);
    this.#server.once("error", retry);
    this.#server.listen({ port: this.port, host, backlog: listenBacklog }, () => {
      this.#server.off("error", retry);
      this.#downClosed = null;
    });
  }

  onBodyBytes(n: number): void {
    this.#bodyBytes += n;
  }

  onFinished(finishReason: string, promptTokens: number, completionTokens: number): void {
    this.#completed++;
    this.#success[finishReason] = (this.#success[finishReason] ?? 0) + 1;
    this.#promptTokens += promptTokens;
    this.#generationTokens += completionTokens;
  }

  onAborted(): void {
    this.#aborted++;
    if (this.#downClosed !== null) this.#cutByOom++;
  }

  onBadRequest(): void {
    this.#badRequests++;
  }

  onTenantEnded(
    tenant: string,
    completed: boolean,
    prompt: number,
    completion: number,
    slotMs: number,
  ): void {
    let t = this.#tenants[tenant];
    if (t === undefined) {
      t = { completed: 0, aborted: 0, promptTokens: 0, completionTokens: 0, slotMs: 0 };
      this.#tenants[tenant] = t;
    }
    if (completed) t.completed++;
    else t.aborted++;
    t.promptTokens += prompt;
    t.completionTokens += completion;
    t.slotMs += slotMs;
  }

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    const prefix = this.options.echoPrefix;
    const kind = WORK_ROUTES[path] ?? (prefix !== null && path.startsWith(prefix) ? "echo" : undefined);
    if (kind === undefined) {
      serveInfoRoute(path, req, res, this.options.model, () => this.#metricsText());
      return;
    }
    if (kind !== "echo" && req.method !== "POST") {
      sendJson(res, 405, errorBody(`${req.method} ${path}: use POST`, "invalid_request_error"));
      return;
    }
    this.#received++;
    const auth = req.headers.authorization;
    if (auth !== undefined) {
      this.#auth.push(auth);
      if (this.#auth.length > AUTH_HISTORY) this.#auth.shift();
    }
    const job = new Job(this, kind, req, res);
    if (this.scheduler.admit(job, this.#mayWait)) job.begin();
    else this.#overflow(req, res);
  }

  #overflow(req: IncomingMessage, res: ServerResponse): void {
    const o = this.options;
    if (o.overflow === "refuse") {
      // Before any response byte and without reading the body: what a client sees when a pod's
      // listen backlog is full or its process refuses connections (with the upload still unread,
      // the kernel answers the close with a reset).
      this.#refusedConnections++;
      this.#refusals.connection++;
      req.socket.destroy();
      return;
    }
    const s = this.scheduler;
    const message =
      `server overloaded: ${s.running} running (max_num_seqs ${o.maxNumSeqs}), ` +
      `${s.waiting} waiting (max_waiting ${o.maxWaiting})`;
    if (o.overflow === "429") {
      this.#throttled++;
      this.#refusals["429"]++;
      sendJson(res, 429, errorBody(message, "requests", "rate_limit_exceeded"), { "retry-after": "1" });
    } else {
      this.#overloaded++;
      this.#refusals["503"]++;
      sendJson(res, 503, errorBody(message, "server_error", "overloaded"));
    }
  }

  /** One scrape: vLLM's names, then the sim's own (`sluice_sim_*`). */
  #metricsText(): string {
    const o = this.options;
    const s = this.scheduler;
    return (
      renderMetrics({
        model: o.model,
        running: s.running,
        waiting: s.waiting,
        maxNumSeqs: o.maxNumSeqs,
        success: this.#success,
        promptTokens: this.#promptTokens,
        generationTokens: this.#generationTokens,
      }) +
      renderSimMetrics({
        model: o.model,
        maxRunning: s.maxRunningSeen,
        maxInflight: s.maxInflightSeen,
        refusals: this.#refusals,
        oomEvents: this.machine.oomEvents,
        busySlotSeconds: s.busySlotMs() / 1000,
      })
    );
  }
}
