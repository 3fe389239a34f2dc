/**
 * Shared helpers for the gateway's integration tests: real sockets on port 0, a gateway in
 * front of simulated pods, raw `net` clients for what undici cannot send (no body after the
 * headers, one byte at a time), and the "nothing is left" check every test ends with.
 */
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import type { Writable } from "node:stream";
import { type Logger, pino } from "pino";
import { Agent, type Dispatcher, request } from "undici";
import { parseConfig } from "../../src/config/schema.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { type SimOptions, type SimServer, startSim } from "../../src/sim/server.js";
import { chatBody, WAIT_BOUND_MS, waitFor } from "../helpers/index.js";

// The shared helpers every gateway test also uses, so a gateway test needs one import.
export { chatBody, delay, flush, sha256hex, WAIT_BOUND_MS, waitFor } from "../helpers/index.js";

/**
 * Options for every suite: a bound so a regression that hangs a socket fails the suite instead
 * of stalling the whole run (node's runner has no timeout by default).
 */
export const SUITE = { timeout: 20_000 } as const;

/** A gateway in front of its sims, and everything needed to stop them. */
export interface Stack {
  gateway: Gateway;
  /** `http://127.0.0.1:PORT` of the gateway. */
  url: string;
  port: number;
  sims: SimServer[];
  /**
   * The client side: this stack's own connection pool, destroyed first on close so no client
   * connection (undici may open a spare one) keeps the gateway's `close()` waiting.
   */
  agent: Agent;
  close(): Promise<void>;
}

/** Each stack's client pool by gateway origin, so `call()` needs only the URL. */
const agents = new Map<string, Agent>();

/** The client pool for `url`'s gateway (undici's global one for anything else, e.g. a sim). */
export function dispatcherFor(url: string): Dispatcher | undefined {
  return agents.get(new URL(url).origin);
}

export interface StackOptions {
  /** One sim per entry (each on port 0). */
  sims: SimOptions[];
  /** The raw (snake_case, as in YAML) config, given the sims' URLs. */
  config: (urls: string[]) => Record<string, unknown>;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /** Address the gateway listens on. **Default:** `127.0.0.1`. */
  host?: string;
}

/** Starts the sims, then a gateway on 127.0.0.1:0 configured against them. */
export async function startStack(options: StackOptions): Promise<Stack> {
  const sims = await Promise.all(options.sims.map((o) => startSim({ jitterSigma: 0, ...o })));
  const config = parseConfig(options.config(sims.map((s) => s.url)));
  const gateway = new Gateway({
    config,
    logger: options.logger ?? pino({ level: "silent" }),
    ...(options.env ? { env: options.env } : {}),
  });
  const url = await gateway.listen(0, options.host ?? "127.0.0.1");
  const agent = new Agent();
  agents.set(new URL(url).origin, agent);
  let closed = false;
  return {
    gateway,
    url,
    port: Number(new URL(url).port),
    sims,
    agent,
    async close() {
      if (closed) return;
      closed = true;
      agents.delete(new URL(url).origin);
      await agent.destroy();
      await gateway.close();
      await Promise.all(sims.map((s) => s.close()));
    },
  };
}

/** One model over the given pods, with test-friendly settings (no AIMD, no reserve). */
export function model(
  name: string,
  urls: string[],
  extra: Record<string, unknown> = {},
  podInflight = 1,
): Record<string, unknown> {
  return {
    name,
    max_concurrent_requests: podInflight * urls.length,
    reserve: 0,
    queue_limit: 0,
    queue_timeout_s: 5,
    adaptive: false,
    pods: urls.map((url) => ({ url, max_inflight: podInflight })),
    ...extra,
  };
}

/**
 * `m` (from {@link model}) with every pod listing `statuses` as "not started"
 * (`pods[].redispatch_statuses`): for tests of re-dispatch on a bare server's own refusal, which
 * sluice does only when a pod opts in (issue 21).
 */
export function redispatchOn(statuses: number[], m: Record<string, unknown>): Record<string, unknown> {
  const pods = m.pods as Record<string, unknown>[];
  return { ...m, pods: pods.map((p) => ({ ...p, redispatch_statuses: statuses })) };
}

/**
 * The end of every test: no lane holds or queues a call, no key is charged, and no sim runs
 * or queues one. Polled, because a response's last byte reaches the client just before the
 * gateway's `finally` releases the slot.
 */
export async function assertNothingLeft(stack: Stack): Promise<void> {
  const idle = () => {
    const s = stack.gateway.governor.snapshot();
    return (
      s.lanes.every((l) => l.inflight === 0 && l.queued === 0) &&
      s.pods.every((p) => p.inflight === 0) &&
      s.keys.every((k) => k.inflight === 0 && k.queued === 0) &&
      stack.sims.every((sim) => sim.stats().running === 0 && sim.stats().waiting === 0)
    );
  };
  await waitFor("every lane, pod, key and sim to be idle", idle).catch(() => undefined);
  const s = stack.gateway.governor.snapshot();
  for (const l of s.lanes) {
    assert.equal(l.inflight, 0, `lane ${l.lane} inflight`);
    assert.equal(l.queued, 0, `lane ${l.lane} queued`);
  }
  for (const p of s.pods) assert.equal(p.inflight, 0, `pod ${p.id} inflight`);
  for (const k of s.keys) assert.deepEqual([k.inflight, k.queued], [0, 0], `key ${k.key}`);
  for (const sim of stack.sims) {
    assert.equal(sim.stats().running, 0, `sim ${sim.url} running`);
    assert.equal(sim.stats().waiting, 0, `sim ${sim.url} waiting`);
  }
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** Sends one request with undici and reads the whole answer. */
export async function call(
  url: string,
  path: string,
  opts: {
    method?: "GET" | "POST" | "PUT" | "DELETE";
    body?: string | Buffer;
    headers?: Record<string, string>;
    signal?: AbortSignal;
  } = {},
): Promise<Answer> {
  const method = opts.method ?? (opts.body === undefined ? "GET" : "POST");
  const res = await request(`${url}${path}`, {
    method,
    headers: {
      ...(opts.body !== undefined ? { "content-type": "application/json" } : {}),
      ...opts.headers,
    },
    ...(opts.body !== undefined ? { body: opts.body } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
    dispatcher: dispatcherFor(url),
  });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

/** POSTs a chat body for `modelName`. */
export function chat(
  url: string,
  modelName: string,
  opts: {
    content?: string;
    headers?: Record<string, string>;
    signal?: AbortSignal;
    extra?: Record<string, unknown>;
  } = {},
): Promise<Answer> {
  return call(url, "/v1/chat/completions", {
    body: chatBody(modelName, opts.content ?? "hello", opts.extra),
    ...(opts.headers ? { headers: opts.headers } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
}

/** Starts a request meant to be aborted by `signal`; resolves (never rejects) when it settles. */
export function held(
  url: string,
  modelName: string,
  signal: AbortSignal,
  content = "hold",
): Promise<unknown> {
  return chat(url, modelName, { content, signal }).catch((e: unknown) => e);
}

/** Parses an OpenAI-shaped error body. */
export function errorOf(text: string): Record<string, unknown> {
  const body = JSON.parse(text) as { error?: Record<string, unknown> };
  assert.ok(body.error && typeof body.error === "object", `an OpenAI error body, got ${text}`);
  return body.error;
}

/** Asserts the §3.2 capacity-refusal shape: status, every header, and the body's numbers. */
export function assertRefusal(a: Answer, status: number, code: string): Record<string, unknown> {
  assert.equal(a.status, status, `status for ${code}: ${a.text}`);
  const h = a.headers;
  assert.equal(h["x-sluice-reason"], code);
  const retryAfter = Number(h["retry-after"]);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After ≥ 1 s, got ${h["retry-after"]}`);
  const retryMs = Number(h["retry-after-ms"]);
  assert.ok(retryMs >= 1000, `retry-after-ms ≥ 1000, got ${h["retry-after-ms"]}`);
  assert.equal(retryAfter, Math.ceil(retryMs / 1000), "Retry-After is retry-after-ms in whole seconds");
  for (const name of ["x-sluice-width", "x-sluice-queue-limit", "x-sluice-inflight", "x-sluice-queued"]) {
    assert.match(String(h[name]), /^\d+$/, `${name} is a count`);
  }
  assert.match(String(h["content-type"]), /^application\/json/);
  const e = errorOf(a.text);
  assert.equal(e.type, "sluice_capacity");
  assert.equal(e.code, code);
  assert.equal(typeof e.message, "string");
  assert.equal(e.retry_after_ms, retryMs);
  assert.equal(e.width, Number(h["x-sluice-width"]));
  assert.equal(e.queue_limit, Number(h["x-sluice-queue-limit"]));
  assert.equal(e.inflight, Number(h["x-sluice-inflight"]));
  assert.equal(e.queued, Number(h["x-sluice-queued"]));
  return e;
}

/** Asserts a bad-input answer (§3.2 last row): status, code, reason header, OpenAI body. */
export function assertBadInput(a: Answer, status: number, code: string): Record<string, unknown> {
  assert.equal(a.status, status, `status for ${code}: ${a.text}`);
  assert.equal(a.headers["x-sluice-reason"], code);
  const e = errorOf(a.text);
  assert.equal(e.code, code);
  assert.equal(typeof e.message, "string");
  assert.ok((e.message as string).length > 0);
  return e;
}

/** What a raw socket received: the bytes, and whether the server closed its side. */
export interface RawExchange {
  socket: Socket;
  /** Everything received so far, as latin1 text. */
  received(): string;
  /** Resolves once the text received matches `pattern` (or rejects after `timeoutMs`). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves when the server ends or resets the connection. */
  closed: Promise<void>;
  /** True once the connection ended or was reset. */
  isClosed(): boolean;
}

/** Opens a raw TCP connection to the gateway and writes `head` (if any). */
export async function rawConnect(port: number, head?: string): Promise<RawExchange> {
  const socket = connect({ port, host: "127.0.0.1" });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let text = "";
  let done = false;
  socket.on("data", (chunk: Buffer) => {
    text += chunk.toString("latin1");
  });
  const closed = new Promise<void>((resolve) => {
    const end = () => {
      done = true;
      resolve();
    };
    socket.once("end", end);
    socket.once("close", end);
    // A reset after our FIN is a close for these tests; the error itself is not a failure.
    socket.on("error", end);
  });
  if (head !== undefined) socket.write(head);
  return {
    socket,
    received: () => text,
    closed,
    isClosed: () => done,
    async waitFor(pattern: RegExp, timeoutMs = WAIT_BOUND_MS) {
      await waitFor(
        `raw answer matching ${pattern} (got ${JSON.stringify(text.slice(0, 200))})`,
        () => pattern.test(text),
        timeoutMs,
      );
      return text;
    },
  };
}

/** True once `text` holds a whole answer framed by Content-Length (after any 1xx heads). */
export function completeAnswer(text: string): boolean {
  const rest = text.replace(/^(HTTP\/1\.1 1\d\d [^\r]*\r\n(?:[^\r]+\r\n)*\r\n)+/, "");
  const end = rest.indexOf("\r\n\r\n");
  if (end < 0) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(rest.slice(0, end))?.[1];
  return length !== undefined && Buffer.byteLength(rest.slice(end + 4), "latin1") >= Number(length);
}

/** Resolves true when the server closed `raw` within `ms`, false otherwise (a bound, not a measurement). */
export async function closedWithin(raw: RawExchange, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const closed = await Promise.race([raw.closed.then(() => true as const), late]);
  clearTimeout(timer);
  return closed;
}

/** Splits a raw HTTP/1.1 answer into status, lower-cased headers and body text. */
export function parseRaw(text: string): { status: number; headers: Record<string, string>; body: string } {
  const end = text.indexOf("\r\n\r\n");
  assert.ok(end > 0, `a complete head in ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine, ...lines] = text.slice(0, end).split("\r\n");
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine ?? "")?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(":");
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return { status, headers, body: text.slice(end + 4) };
}

/** A writable that keeps every pino line, for asserting what the gateway logged. */
export class LogCapture {
  readonly lines: string[] = [];
  readonly stream: Writable;

  constructor() {
    const lines = this.lines;
    this.stream = {
      write(chunk: string | Buffer) {
        lines.push(String(chunk));
        return true;
      },
    } as unknown as Writable;
  }

  get text(): string {
    return this.lines.join("");
  }

  records(): Record<string, unknown>[] {
    return this.text
      .split("\n")
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}
