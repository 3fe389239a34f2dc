/**
 * Hand-written upstreams for the failures the simulator does not model: a pod that reads the whole
 * request and then drops the connection, one that never answers, one that answers 503 with an
 * endless body. Each counts the calls it received by their per-call id (`X-Sluice-Request-Id`,
 * which the gateway sends upstream), so a test can prove a call reached the pods exactly once.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One call as the pod received it (the whole body read before the behaviour runs). */
export interface Received {
  id: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface RawPod {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** Every call received, in order. */
  readonly calls: Received[];
  /** Calls whose connection closed before the pod finished its answer (the gateway aborted them). */
  readonly aborted: () => number;
  /** The per-call ids received. */
  ids(): string[];
  close(): Promise<void>;
}

/** What the pod does with a call once it has read all of it. */
export type Behaviour = (req: IncomingMessage, res: ServerResponse, call: Received) => void;

/** Starts a pod on 127.0.0.1:0 that reads each request in full, records it, then runs `behave`. */
export async function startRawPod(behave: Behaviour): Promise<RawPod> {
  const calls: Received[] = [];
  let aborted = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const call: Received = {
        id: String(req.headers["x-sluice-request-id"] ?? ""),
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      calls.push(call);
      res.on("close", () => {
        if (!res.writableFinished) aborted++;
      });
      behave(req, res, call);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    aborted: () => aborted,
    ids: () => calls.map((c) => c.id),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Reads the request, then drops the connection without a byte of answer (a crash mid-call). */
export const dropAfterRead: Behaviour = (req) => {
  req.socket.destroy();
};

/** Reads the request and never answers (a hung pod). */
export const neverAnswer: Behaviour = () => {};

/** Answers 200 with a small chat completion naming the model it was asked for. */
export const answerOk: Behaviour = (_req, res, call) => {
  const model = (JSON.parse(call.body || "{}") as { model?: string }).model ?? "";
  const body = JSON.stringify({
    id: "chatcmpl-raw",
    object: "chat.completion",
    model,
    choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
};

/** Answers every call with `status`, a small OpenAI-shaped error body and `headers`. */
export function answerStatus(status: number, headers: Record<string, string> = {}): Behaviour {
  return (_req, res) => {
    const body = JSON.stringify({ error: { message: status === 429 ? "quota" : "overloaded" } });
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
      ...headers,
    });
    res.end(body);
  };
}

/** Answers 503 with a small OpenAI-shaped body (an overloaded pod that did not run the call). */
export const answer503: Behaviour = (_req, res) => {
  const body = JSON.stringify({ error: { type: "server_error", code: "overloaded", message: "overloaded" } });
  res.writeHead(503, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
};
