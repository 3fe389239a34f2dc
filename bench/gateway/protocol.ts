/**
 * Messages between the gateway benchmark's orchestrator (main.ts) and its child processes
 * (loadgen.ts, bare-proxy.ts, serve.ts), over the `fork()` IPC channel.
 */

/** One closed-loop run of the Node load generator. */
export interface RunSpec {
  /** Origins; connection i talks to `urls[i % urls.length]` (keep-alive, one request at a time). */
  urls: string[];
  path: string;
  /** The JSON request body, sent with `content-type: application/json`. */
  body: string;
  connections: number;
  warmupMs: number;
  durationMs: number;
  /**
   * Connection i sends its first request after i × staggerMs / connections, so closed-loop
   * clients of a fixed service time do not move in lock-step waves. 0 = all at once.
   */
  staggerMs: number;
  /** Pause after a refusal (429/503) or a transport error before the connection's next request. */
  backoffMs: number;
}

/** What one run measured inside its window (warm-up excluded). */
export interface RunResult {
  seconds: number;
  /** 200s completed inside the window (the body read to its end). */
  ok: number;
  /** 429 and 503 answers. */
  refused: number;
  /** Any other status. */
  other: number;
  /** Transport errors (reset, timeout). */
  errors: number;
  okP50Ms: number;
  okP99Ms: number;
  refusedP50Ms: number;
  refusedP99Ms: number;
  statuses: Record<string, number>;
}

export type LoadgenMessage =
  | { type: "window"; phase: "start" | "end" }
  | { type: "result"; result: RunResult }
  | { type: "error"; message: string };

/** A listener of the bare proxy: round-robin over `pods`, one undici Pool of `perPod` each. */
export interface BareListener {
  pods: string[];
  perPod: number;
  /**
   * When set, a counter bound: with pods × perPod + queueLimit requests held (in flight or in
   * undici's queue), the next is answered a fixed 429 at once (the retry storm's policy, at the
   * cost of one comparison). Unset: every request waits in undici's unbounded queue.
   */
  queueLimit?: number;
}

export type ReadyMessage = { type: "ready"; urls: string[] };

/**
 * One retry-storm run (storm.ts): raw keep-alive sockets, each with one request out at a time.
 * A storm connection sends its next request the moment an answer (any answer) has arrived, as
 * wrk or a naive retry loop does; a polite connection, after a refusal, first waits the
 * refusal's Retry-After (or `politeDefaultMs` when it has none).
 */
export interface StormSpec {
  /** Origins; connection i talks to `urls[i % urls.length]`. */
  urls: string[];
  path: string;
  /** The JSON request body, sent with `content-type: application/json`. */
  body: string;
  /** Connections that re-send at once. */
  connections: number;
  /** Connections that honour Retry-After (added to `connections`). */
  polite: number;
  /** What a polite connection waits after a refusal without Retry-After. */
  politeDefaultMs: number;
  warmupMs: number;
  durationMs: number;
  /** Connection i sends its first request after i × staggerMs / all connections. */
  staggerMs: number;
}

/** What one kind of storm connection measured inside the window. */
export interface StormSide {
  ok: number;
  refused: number;
  other: number;
  errors: number;
  okP50Ms: number;
  okP99Ms: number;
  refusedP50Ms: number;
  refusedP99Ms: number;
}

export interface StormResult {
  seconds: number;
  storm: StormSide;
  polite: StormSide;
  /** p99 of every 200, storm and polite connections together. */
  okP99Ms: number;
  /** Answers that closed their connection (`Connection: close`), so the client reconnected. */
  reconnects: number;
  statuses: Record<string, number>;
}

export type StormMessage = { type: "storm-result"; result: StormResult };
