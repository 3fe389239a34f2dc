/**
 * sluice's capacity refusals on the wire (DESIGN §3.2): the status and `code` from the error
 * class, an OpenAI-shaped body every SDK surfaces, and the numbers a client needs to size its
 * window, as headers and as body fields (STYLE G6).
 */
import type { ServerResponse } from "node:http";
import { BreakerOpenError, QueueFullError, type SluiceError, StoreUnavailableError } from "../core/errors.js";
import { MIN_RETRY_AFTER_MS, retryAfterFloor } from "../core/retry-after.js";
import type { WaitState } from "../core/wait-state.js";
import { noteRefusal } from "./pacing.js";

/** The lane's numbers at the moment of the refusal. */
export interface LaneNumbers {
  lane: string;
  inflight: number;
  queued: number;
  queueLimit: number;
  width: number;
  /** Why its callers wait (`core/wait-state.ts`); absent when no lane is known. */
  state?: WaitState | undefined;
}

/**
 * Retry-After in ms carried by the error (every capacity error has a `retryAfterMs`: queue
 * full, key limit, queue timeout, breaker open, quota paused, store unavailable), at least 1 s:
 * the floor the wire's jittered value starts from.
 */
export function retryAfterOf(error: SluiceError): number {
  const carried = (error as { retryAfterMs?: unknown }).retryAfterMs;
  return retryAfterFloor(typeof carried === "number" ? carried : MIN_RETRY_AFTER_MS);
}

/**
 * Refusals' Retry-After is the computed value (the floor: DESIGN §3.2's drain-rate wait, a
 * breaker's cooldown, a quota's reset) plus a uniform random extra of up to this fraction of it.
 * Without it every caller refused in one burst is told the same number and its SDK retries land
 * in one wave; with it they come back spread over a fifth of the wait, never earlier than the floor.
 */
export const RETRY_AFTER_JITTER = 0.2;

/** Where the jitter's uniform numbers in [0, 1) come from. */
let jitterSource: () => number = Math.random;

/**
 * Replaces the jitter's source of uniform numbers in [0, 1) (tests pass a seeded or constant one;
 * `() => 0` gives the computed value exactly) and returns the one it replaced, to put back.
 */
export function setRetryAfterJitter(source: () => number): () => number {
  const previous = jitterSource;
  jitterSource = source;
  return previous;
}

/** `floorMs` plus up to {@link RETRY_AFTER_JITTER} of it, in whole ms; never below `floorMs`. */
export function jitteredRetryAfterMs(floorMs: number, random: () => number = jitterSource): number {
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.max(floorMs, Math.ceil(floorMs * (1 + RETRY_AFTER_JITTER * r)));
}

/** Numbers for the headers: the error's own when it has them, else the lane's. */
function numbersOf(error: SluiceError, lane: LaneNumbers | undefined): LaneNumbers {
  if (error instanceof QueueFullError) {
    return {
      lane: error.lane,
      inflight: error.inflight,
      queued: error.queued,
      queueLimit: error.queueLimit,
      width: error.width,
      state: lane?.lane === error.lane ? lane.state : undefined,
    };
  }
  return lane ?? { lane: "", inflight: 0, queued: 0, queueLimit: 0, width: 0 };
}

/** The wait every capacity error's message ends with (errors.ts), in its unjittered form. */
const RETRY_IN = /retry in \d+ ms$/;

/**
 * The refusal's message on the wire: the error's own, less what only the operator should see
 * (never a pod address or an internal error text in a client's answer; the pods are in the
 * breaker's log lines and the snapshot), and with the wait the answer really asks for — the
 * jittered `retryMs` of its headers and `retry_after_ms`, not the floor it was drawn from, so a
 * client reading any of the three reads one number.
 */
export function wireMessage(error: SluiceError, retryMs: number): string {
  if (error instanceof BreakerOpenError)
    return `every pod of lane ${error.lane} is tripped; retry in ${retryMs} ms`;
  if (error instanceof StoreUnavailableError) return `the fleet store is unavailable; retry in ${retryMs} ms`;
  return error.message.replace(RETRY_IN, `retry in ${retryMs} ms`);
}

/** JSON string literals of lane names and codes: few (the config's and the error classes'), rendered once. */
const literals = new Map<string, string>();
const MAX_LITERALS = 1024;

function literal(s: string): string {
  let q = literals.get(s);
  if (q === undefined) {
    q = JSON.stringify(s);
    if (literals.size < MAX_LITERALS) literals.set(s, q);
  }
  return q;
}

/**
 * The refusal's body, byte for byte what `JSON.stringify` makes of
 * `{ error: { type, code, message, lane, inflight, queued, queue_limit, width, retry_after_ms, state } }`
 * (`state` only when known; refusal.test.ts checks it), built from parts: under a retry storm the
 * gateway sends thousands a second, and only the message needs escaping each time.
 */
export function refusalBody(code: string, message: string, n: LaneNumbers, retryMs: number): string {
  const { inflight, queued, queueLimit, width, state } = n;
  if (!(isCount(inflight) && isCount(queued) && isCount(queueLimit) && isCount(width) && isCount(retryMs))) {
    // Not plain numbers (never expected): let JSON decide how each prints.
    return JSON.stringify({
      error: {
        type: "sluice_capacity",
        code,
        message,
        lane: n.lane,
        inflight,
        queued,
        queue_limit: queueLimit,
        width,
        retry_after_ms: retryMs,
        ...(state === undefined ? {} : { state }),
      },
    });
  }
  const tail = state === undefined ? "}}" : `,"state":"${state}"}}`;
  return `{"error":{"type":"sluice_capacity","code":${literal(code)},"message":${JSON.stringify(message)},"lane":${literal(n.lane)},"inflight":${inflight},"queued":${queued},"queue_limit":${queueLimit},"width":${width},"retry_after_ms":${retryMs}${tail}`;
}

/** A finite number: a template prints it as JSON does. */
function isCount(x: unknown): x is number {
  return typeof x === "number" && Number.isFinite(x);
}

/**
 * Sends the refusal. `close` adds `Connection: close` (pre-body refusals: the unread upload must
 * not be parsed as the next request). `priority` is the class the request was judged as.
 */
export function sendRefusal(
  res: ServerResponse,
  error: SluiceError,
  lane: LaneNumbers | undefined,
  requestId: string,
  close: boolean,
  priority?: string,
): void {
  const n = numbersOf(error, lane);
  // The header, the ms header and the body carry the same jittered value.
  const retryMs = jitteredRetryAfterMs(retryAfterOf(error));
  noteRefusal(res.req, performance.now(), retryMs);
  const body = refusalBody(error.code, wireMessage(error, retryMs), n, retryMs);
  // A flat [name, value, …] list: writeHead takes it without building and walking an object,
  // which matters on the refusal path (thousands a second under overload).
  const headers: string[] = [
    "content-type",
    "application/json",
    "content-length",
    String(Buffer.byteLength(body)),
    "retry-after",
    String(Math.ceil(retryMs / 1000)),
    "retry-after-ms",
    String(retryMs),
    "x-sluice-width",
    String(n.width),
    "x-sluice-queue-limit",
    String(n.queueLimit),
    "x-sluice-inflight",
    String(n.inflight),
    "x-sluice-queued",
    String(n.queued),
    "x-sluice-reason",
    error.code,
    "x-sluice-request-id",
    requestId,
  ];
  if (n.lane) headers.push("x-sluice-lane", n.lane);
  if (n.state !== undefined) headers.push("x-sluice-state", n.state);
  if (priority) headers.push("x-sluice-priority", priority);
  if (close) headers.push("connection", "close");
  res.writeHead(error.httpStatus, headers);
  res.end(body);
}
