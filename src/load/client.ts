/**
 * One HTTP attempt as the load runner's clients make it (undici, a real socket), and how it
 * ended: every byte of a 2xx answer compared with what the sim sent, a sluice refusal told apart
 * from a pod's own failure, a refused or reset connection named as such.
 */
import { type Dispatcher, request } from "undici";
import type { Attempt } from "./stats.js";

/** A request ready to send, and the exact answer it should get. */
export interface PreparedRequest {
  path: string;
  body: Buffer;
  headers: Record<string, string>;
  /** The bytes a 2xx answer must carry. */
  expected: Buffer;
}

/** The result of one attempt, without the bookkeeping the driver adds (group, start time). */
export type AttemptResult = Omit<Attempt, "group" | "startMs">;

const RESET_CODES = new Set(["UND_ERR_SOCKET", "ECONNRESET", "EPIPE", "UND_ERR_CLOSED"]);

/**
 * Sends `req` to `base` and reads the whole answer. Never throws: every ending is an
 * {@link AttemptResult}. `timeout` is the client's own bound; `signal` stops the run.
 */
export async function attempt(
  base: string,
  req: PreparedRequest,
  dispatcher: Dispatcher,
  signal: AbortSignal,
  timeoutMs: number | undefined,
): Promise<AttemptResult> {
  const started = performance.now();
  const timeout = timeoutMs === undefined ? undefined : AbortSignal.timeout(Math.max(1, timeoutMs));
  const combined = timeout === undefined ? signal : AbortSignal.any([signal, timeout]);
  const ended = (code: string, status: number, extra: Partial<AttemptResult> = {}): AttemptResult => ({
    ms: performance.now() - started,
    code,
    status,
    sluiceRefusal: false,
    sized: false,
    queueMs: -1,
    retryAfterMs: -1,
    ...extra,
  });
  let res: Dispatcher.ResponseData;
  try {
    res = await request(`${base}${req.path}`, {
      method: "POST",
      body: req.body,
      headers: req.headers,
      dispatcher,
      signal: combined,
    });
  } catch (e) {
    return ended(errorCode(e, timeout), 0);
  }
  const status = res.statusCode;
  let body: Buffer;
  try {
    body = Buffer.from(await res.body.arrayBuffer());
  } catch (e) {
    return ended(errorCode(e, timeout), status);
  }
  const h = res.headers;
  const queueMs = numberHeader(h["x-sluice-queue-ms"]);
  if (status >= 200 && status < 300) {
    return ended(body.equals(req.expected) ? "ok" : "bytes_mismatch", status, { queueMs });
  }
  const reason = stringHeader(h["x-sluice-reason"]);
  const sluiceRefusal = reason !== undefined && isCapacityBody(body);
  const retryMs = numberHeader(h["retry-after-ms"]);
  const retryS = numberHeader(h["retry-after"]);
  return ended(reason ?? `http_${status}`, status, {
    sluiceRefusal,
    sized:
      sluiceRefusal &&
      retryS >= 0 &&
      h["x-sluice-width"] !== undefined &&
      h["x-sluice-queue-limit"] !== undefined,
    queueMs,
    retryAfterMs: retryMs >= 0 ? retryMs : retryS >= 0 ? retryS * 1000 : -1,
  });
}

/** What the client saw when there was no (complete) answer. */
function errorCode(e: unknown, timeout: AbortSignal | undefined): string {
  if (timeout?.aborted === true) return "client_timeout";
  const err = e as { code?: unknown; name?: unknown; cause?: { code?: unknown } };
  const code =
    typeof err.code === "string" ? err.code : typeof err.cause?.code === "string" ? err.cause.code : "";
  if (code === "ECONNREFUSED") return "connection_refused";
  if (RESET_CODES.has(code)) return "connection_reset";
  if (err.name === "AbortError" || code === "UND_ERR_ABORTED") return "cut_at_drain";
  return code === "" ? "client_error" : code.toLowerCase();
}

function isCapacityBody(body: Buffer): boolean {
  try {
    return (
      (JSON.parse(body.toString("utf8")) as { error?: { type?: unknown } }).error?.type === "sluice_capacity"
    );
  } catch {
    return false;
  }
}

function stringHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function numberHeader(v: string | string[] | undefined): number {
  const s = stringHeader(v);
  if (s === undefined || s.trim() === "") return -1;
  const n = Number(s);
  return Number.isFinite(n) && n >= 0 ? n : -1;
}
