/**
 * Phase 6 (DESIGN §3.1): send the call to the pod the lease names, through that pod's keep-alive
 * undici pool, and stream the answer back byte for byte. A pod that refuses before starting the
 * call (connection refused or reset before any response byte, or an overload status) gets the
 * call re-dispatched to another pod within the lane's retry budget — only while the body can be
 * replayed and nothing has been sent to the client. The outcome goes to the lease (AIMD, breaker).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import type { Lease } from "../../core/lease.js";
import { classifyOutcome } from "../../core/outcome.js";
import { HttpError } from "../http-error.js";
import { responseHeaders, type Upstreams } from "../upstreams.js";
import { type TokenUsage, UsageTap } from "../usage.js";
import { limitedBody } from "./read-body.js";

/** What the settle phase needs to know about the dispatch. */
export interface DispatchResult {
  status: number;
  bytes: number;
  usage: TokenUsage | undefined;
  /** The upstream status that counted as overload, for metrics. */
  overloadStatus: number | undefined;
  /** Set when the client went away mid-call. */
  clientGone: boolean;
  error: string | undefined;
}

export interface DispatchInput {
  req: IncomingMessage;
  res: ServerResponse;
  lease: Lease;
  model: string;
  path: string;
  /** The buffered body (replayable), or null to stream `req` through. */
  body: Buffer | null;
  /** Bounds for a body streamed through. */
  limits: { maxBodyBytes: number; bodyTimeoutMs: number };
  stream: boolean;
  signal: AbortSignal;
  /** Headers sluice adds to the answer. */
  extraHeaders: Record<string, string | number>;
}

const OVERLOAD = new Set([502, 503, 504, 529]);

export async function dispatch(upstreams: Upstreams, input: DispatchInput): Promise<DispatchResult> {
  const { req, res, lease, body } = input;
  const result: DispatchResult = {
    status: 0,
    bytes: 0,
    usage: undefined,
    overloadStatus: undefined,
    clientGone: false,
    error: undefined,
  };
  const headers = upstreams.requestHeaders(req.headers, input.model, body?.length);
  for (;;) {
    const target = upstreams.target(lease.pod!);
    let answer: Dispatcher.ResponseData;
    try {
      answer = await target.pool.request({
        path: target.basePath + input.path,
        method: req.method as Dispatcher.HttpMethod,
        headers,
        // undici accepts an async iterable body; its typings list only Readable.
        body:
          body ??
          (limitedBody(req, input.limits.maxBodyBytes, input.limits.bodyTimeoutMs) as unknown as Readable),
        signal: input.signal,
      });
    } catch (error) {
      if (input.signal.aborted) {
        result.clientGone = true;
        lease.release(); // a client abort says nothing about the pod
        return result;
      }
      // The client's streamed body broke a bound (413/408): the client's fault, not the pod's.
      const own = error instanceof HttpError ? error : (error as { cause?: unknown }).cause;
      if (own instanceof HttpError) {
        lease.release();
        throw own;
      }
      // Refused before any response byte: the pod never started it; try another one.
      if (body !== null && classifyOutcome(error).kind === "congestion" && (await lease.retry(error)))
        continue;
      lease.failed(error);
      result.status = 502;
      result.error = (error as Error).message;
      sendUpstreamError(res, lease, input.extraHeaders, error as Error);
      return result;
    }
    const status = answer.statusCode;
    if (OVERLOAD.has(status) && body !== null) {
      // An overload answer: the pod did not run the call. Re-dispatch if the budget allows;
      // otherwise pass the pod's own answer through.
      const text = await answer.body.arrayBuffer().catch(() => new ArrayBuffer(0));
      const failure = { status, headers: answer.headers };
      result.overloadStatus = status;
      if (await lease.retry(failure).catch(() => false)) continue;
      writeHead(res, status, answer.headers, input.extraHeaders, lease);
      res.end(Buffer.from(text));
      result.status = status;
      result.bytes = text.byteLength;
      return result;
    }
    writeHead(res, status, answer.headers, input.extraHeaders, lease);
    result.status = status;
    const tap = new UsageTap(
      input.stream || String(answer.headers["content-type"] ?? "").includes("event-stream"),
    );
    try {
      for await (const chunk of answer.body as AsyncIterable<Buffer>) {
        tap.push(chunk);
        if (!res.write(chunk)) await waitDrain(res, input.signal);
      }
      res.end();
    } catch (error) {
      result.bytes = tap.bytes;
      if (input.signal.aborted) {
        result.clientGone = true;
        lease.release();
      } else {
        lease.failed(error);
        result.error = (error as Error).message;
        res.destroy(error as Error);
      }
      return result;
    }
    result.bytes = tap.bytes;
    result.usage = tap.usage();
    if (OVERLOAD.has(status) || status === 429) {
      result.overloadStatus = status;
      lease.failed({ status, headers: answer.headers });
    } else if (status >= 500) {
      lease.failed(status);
    } else {
      lease.succeeded(
        result.usage
          ? { promptTokens: result.usage.promptTokens, completionTokens: result.usage.completionTokens }
          : undefined,
      );
    }
    return result;
  }
}

function writeHead(
  res: ServerResponse,
  status: number,
  upstream: Record<string, string | string[] | undefined>,
  extra: Record<string, string | number>,
  lease: Lease,
): void {
  extra["x-sluice-queue-ms"] = Math.round(lease.queuedMs);
  res.writeHead(status, responseHeaders(upstream, extra));
}

function waitDrain(res: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      if (signal.aborted) reject(signal.reason);
      else resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

function sendUpstreamError(
  res: ServerResponse,
  lease: Lease,
  extra: Record<string, string | number>,
  error: Error,
): void {
  if (res.headersSent) {
    res.destroy(error);
    return;
  }
  const body = JSON.stringify({
    error: {
      type: "upstream_error",
      code: "upstream_error",
      message: `pod ${lease.pod} failed: ${error.message}`,
      lane: lease.lane,
    },
  });
  res.writeHead(502, {
    ...extra,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

export type { DispatchResult as Dispatched };
