/**
 * Retry storms (issue 13; seed 000: callers retried at once and made it worse). A refusal tells
 * its client when to come back (Retry-After). A client that sends the same request again on the
 * same connection before then, while this gateway's event loop is saturated, gets its next
 * refusal — the same status, headers and body, decided and counted when the request arrived —
 * only when the Retry-After it ignored has passed. While its answer is held the client sends nothing more (one
 * request at a time per HTTP/1.1 connection), so a storm of immediate retries costs one refusal
 * per connection per Retry-After instead of as many as the loop can answer; the answers coming
 * back from the pods no longer wait behind them, and the pods stay busy.
 *
 * "The same request" is the same method, URL, declared length and `Idempotency-Key` (see
 * {@link requestIdentity}): what can be read before the body. A pooled keep-alive client that
 * sends its *next* request on a connection refused a moment ago — seed 000's orchestrator posting
 * the next page, `/ocr/pages-124` after `/ocr/pages-123` — is not retrying and is answered at
 * once (ocr-flood's refusals p99 went from 919 ms to tens of ms with this rule). Two different
 * chat prompts of exactly the same length on one connection look like a retry; such a request
 * is held at most {@link MAX_HOLD_MS}, only while the loop is saturated, and a client that sends
 * an `Idempotency-Key` per call is never mistaken.
 *
 * Nothing changes for a client that honours Retry-After, for a request that is admitted (a
 * connection's next call to another lane goes through at once), or while the loop keeps up: the
 * overload (c) clients of bench:gateway, 50 ms apart, are answered at once as before.
 *
 * A retry sent *at once* — the same request back within {@link IMMEDIATE_MS} of its refusal, as
 * wrk, a retry loop without backoff or the bench's storm client sends it — is held whether or not
 * the loop is saturated (issue 26). Waiting for saturation let such a storm run unpaced until a
 * saturated sample was seen (from a cold start, and again each time pacing lapsed after
 * {@link PACING_MS}), and while it ran the pods' answers queued behind thousands of refusals a
 * second: under `wrk -c256` the pods idled and the answered p99 was 1.5–2× HAProxy's. A client
 * that waits even a little between tries (the overload (c) clients, 50 ms) is not immediate and
 * keeps being answered at once while the loop keeps up. A held refusal's client retries at once
 * again, so a storming connection stays paced by this rule alone: one refusal per Retry-After.
 *
 * "Saturated" is the event loop's utilization (the share of time not waiting for I/O, as
 * fastify's under-pressure reads it) over a window of at least {@link SAMPLE_MS} in which at
 * least {@link MIN_EARLY_RETRIES} early retries were refused, sampled only when an early retry
 * is refused; one saturated window keeps pacing on for {@link PACING_MS}, so the storm does not
 * come back for the moment the loop looks idle because it is paced. A hold lasts at most
 * {@link MAX_HOLD_MS}.
 */
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { type EventLoopUtilization, performance } from "node:perf_hooks";
import { MIN_RETRY_AFTER_MS } from "../core/retry-after.js";
import type { GatewayParts, RequestContext } from "./context.js";

/** A utilization sample covers at least this long. */
export const SAMPLE_MS = 250;
/** A sample at or above this share of busy time counts as saturated… */
export const SATURATED_UTILIZATION = 0.9;
/**
 * …when at least this many early retries were refused in it (200 a second): the loop is busy
 * because of a storm, not because of a burst of work while a few clients retry early.
 */
export const MIN_EARLY_RETRIES = 50;
/**
 * A sample with this many retries sent at once is reported as a storm while the loop keeps up
 * (they are held, so they come at most once a Retry-After per connection: 16 storming
 * connections make ~16 a second, 4 a sample).
 */
export const MIN_IMMEDIATE_RETRIES = 4;
/** Pacing stays on this long after the last saturated sample. */
export const PACING_MS = 10_000;
/**
 * A refusal is held at most this long, whatever its Retry-After: a breaker's cooldown or a
 * quota's reset can be a minute, longer than a client should wait for its answer. One second
 * is the shortest Retry-After sluice gives, and it already limits a storming connection to one
 * refusal a second.
 */
export const MAX_HOLD_MS = MIN_RETRY_AFTER_MS;

/**
 * A retry that arrives this soon after its refusal was sent came back at once: no backoff, only
 * the round trip and the parse (under a millisecond on loopback, a few on a LAN). A client that
 * backs off at all waits longer (the SDKs: half a second and up; bench (c): 50 ms).
 */
export const IMMEDIATE_MS = 20;

/** A connection's last refusal: when it told its client to come back, and to which request. */
interface LastRefusal {
  /** performance.now() ms the refusal was sent. */
  sentAt: number;
  /** performance.now() ms. */
  until: number;
  /** {@link requestIdentity} of the refused request. */
  request: string;
}

/** Each connection's last refusal. */
const lastRefusal = new WeakMap<Socket, LastRefusal>();

/** What pacing reads of a request: its connection and what tells one request from another. */
export type PacedRequest = Pick<IncomingMessage, "socket" | "method" | "url" | "headers">;

/**
 * What makes a request "the same" as one refused before: method, URL, declared length (or
 * chunked) and `Idempotency-Key` — all read before the body, so a pre-body refusal and a refusal
 * after the body agree. A retry re-sends the same bytes; a pooled client's next call differs in
 * at least one of these nearly always (a per-call path, another prompt length, a new key).
 */
export function requestIdentity(req: PacedRequest): string {
  const h = req.headers;
  const length = h["content-length"] ?? (h["transfer-encoding"] !== undefined ? "chunked" : "");
  const key = h["idempotency-key"];
  return `${req.method} ${req.url} ${length}${key === undefined ? "" : ` ${key}`}`;
}

let lastSample: EventLoopUtilization = performance.eventLoopUtilization();
let lastSampleAt = performance.now();
/** Early retries refused since `lastSampleAt`. */
let early = 0;
let pacingUntil = Number.NEGATIVE_INFINITY;

/** The sample that switched pacing on: what the gateway logs (a storm is never silent). */
export interface PacingStart {
  /** The event loop's busy share over the sample, 0–1. */
  utilization: number;
  /** Early retries refused in the sample. */
  earlyRetries: number;
  /** The sample's length. */
  sampleMs: number;
}

const starts = new Set<(s: PacingStart) => void>();

/** Calls `listener` each time pacing switches on (not while it stays on); returns the unsubscribe. */
export function onPacingStart(listener: (s: PacingStart) => void): () => void {
  starts.add(listener);
  return () => starts.delete(listener);
}

/** How saturation is read (`immediate`: the early retry came back at once); replaced in tests. */
let saturated: (now: number, immediate: boolean) => boolean = sampleLoop;

/** Records that the refusal of `req`, sent at `now`, asked its client to wait `retryMs`. */
export function noteRefusal(req: PacedRequest, now: number, retryMs: number): void {
  const socket = req.socket;
  if (socket !== null)
    lastRefusal.set(socket, { sentAt: now, until: now + retryMs, request: requestIdentity(req) });
}

/**
 * When to send the refusal of `req`, which arrived at `arrivedAt`: 0 for at once, else the time
 * (performance.now() ms) its connection's previous refusal said to come back, at most
 * {@link MAX_HOLD_MS} from `now` — when it is the same request sent again before then
 * ({@link requestIdentity}), and it came back at once ({@link IMMEDIATE_MS}) or the loop is
 * saturated.
 */
export function holdUntil(req: PacedRequest, arrivedAt: number, now: number): number {
  const socket = req.socket;
  if (socket === null) return 0;
  const last = lastRefusal.get(socket);
  if (last === undefined || arrivedAt >= last.until || now >= last.until) return 0;
  if (last.request !== requestIdentity(req)) return 0;
  const immediate = arrivedAt - last.sentAt <= immediateMs;
  // Asked either way: it counts the early retries of the sample that reports a storm.
  const paced = saturated(now, immediate);
  return paced || immediate ? Math.min(last.until, now + MAX_HOLD_MS) : 0;
}

/** {@link IMMEDIATE_MS} in force; replaced by tests and by the bench's "pacing off" (-1: never). */
let immediateMs = IMMEDIATE_MS;

/**
 * Replaces how soon after its refusal a retry counts as sent at once (-1: never, so only a
 * saturated loop paces; bench/gateway/unpaced.mjs turns pacing off with it and
 * {@link setLoopSaturation} `() => false`) and returns the one it replaced, to put back.
 */
export function setImmediateMs(ms: number): number {
  const previous = immediateMs;
  immediateMs = ms;
  return previous;
}

/** Immediate retries since `lastSampleAt`. */
let immediates = 0;
/** Until when a storm of immediate retries counts as reported (logged once, not per sample). */
let stormUntil = Number.NEGATIVE_INFINITY;

/**
 * Counts one early retry (`immediate`: sent at once) and says whether the loop is saturated by
 * them (see the constants). A sample of {@link MIN_IMMEDIATE_RETRIES} immediate retries is reported
 * as a storm even when the loop keeps up: they are held anyway, and a storm is never silent.
 */
function sampleLoop(now: number, immediate: boolean): boolean {
  early++;
  if (immediate) immediates++;
  if (now - lastSampleAt >= SAMPLE_MS) {
    const current = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(current, lastSample);
    const sample = { utilization, earlyRetries: early, sampleMs: Math.round(now - lastSampleAt) };
    const wasReported = now < pacingUntil || now < stormUntil;
    let storm = false;
    if (utilization >= SATURATED_UTILIZATION && early >= MIN_EARLY_RETRIES) {
      pacingUntil = now + PACING_MS;
      storm = true;
    }
    if (immediates >= MIN_IMMEDIATE_RETRIES) {
      stormUntil = now + PACING_MS;
      storm = true;
    }
    if (storm && !wasReported) for (const listener of starts) listener(sample);
    lastSample = current;
    lastSampleAt = now;
    early = 0;
    immediates = 0;
  }
  return now < pacingUntil;
}

/**
 * Replaces how saturation is read (tests pass `() => true` to pace every early retry, or
 * `() => false` to pace only immediate ones) and returns the one it replaced, to put back.
 */
export function setLoopSaturation(
  read: (now: number, immediate: boolean) => boolean,
): (now: number, immediate: boolean) => boolean {
  const previous = saturated;
  saturated = read;
  return previous;
}

/**
 * Holds a refusal until `until` (pacing.ts: the client retried before the Retry-After it was
 * given, while the loop is saturated). What the request holds is given back first — the
 * admission bound and its buffered body — so a held refusal takes no one's room; settle then has
 * nothing left to give. Resolves false when the client left meanwhile (no one to answer).
 */
export function held(ctx: RequestContext, gw: GatewayParts, until: number): Promise<boolean> {
  if (ctx.admitted) {
    gw.governor.leave();
    ctx.admitted = false;
  }
  gw.buffers.used -= ctx.bodyBytes;
  ctx.bodyBytes = 0;
  return new Promise((resolve) => {
    const { res } = ctx;
    const done = () => {
      clearTimeout(timer);
      res.off("close", done);
      resolve(!ctx.clientGone);
    };
    const timer = setTimeout(done, Math.max(0, until - performance.now()));
    res.on("close", done);
  });
}
