/**
 * `createSluiceFetch` (DESIGN §6): a `fetch` for calling a sluice gateway. It keeps each lane's
 * calls within the window the gateway advertises (`window.ts`), waits out sluice's own refusals
 * with full jitter and sends them again, and hands everything else back untouched: a call the
 * gateway forwarded is never sent twice.
 */
import { ConfigError } from "../core/errors.js";
import { PRIORITIES, type Priority } from "../core/priority.js";
import { advertisedWindow, retryAfterMsOf, sluiceRefusal } from "./answer.js";
import { ClientWindow, type Slot, type SlotOutcome, type WindowSnapshot } from "./window.js";

/** The `fetch` shape this wraps and returns (the platform's, undici's, the OpenAI SDK's `fetch` option). */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface SluiceFetchOptions {
  /** The gateway's base URL; paths (`/v1/chat/completions`) resolve against it. Example: `http://127.0.0.1:8080`. */
  baseUrl: string | URL;
  /**
   * Sent as `X-Sluice-Priority` unless a call sets that header itself. The gateway caps it at the
   * key's `max_priority`. **Default:** none (the gateway's `default`).
   */
  priority?: Priority;
  /**
   * How many times one call is sent again after sluice refused it; past that the refusal itself
   * is returned. **Default:** `6`.
   */
  maxRetries?: number;
  /** Calls per lane allowed before the gateway has advertised a width. **Default:** unbounded. */
  initialWindow?: number;
  /** The `fetch` that sends. **Default:** `globalThis.fetch`. */
  fetch?: FetchLike;
  /** Uniform numbers in [0, 1) for the retry jitter. **Default:** `Math.random`. */
  random?: () => number;
}

/** A lane's window, by the model name its calls carry (`""` for calls that name none). */
export interface LaneWindow extends WindowSnapshot {
  lane: string;
}

/** The `fetch` that `createSluiceFetch` returns, with its windows readable. */
export interface SluiceFetch extends FetchLike {
  /** Each lane's window now. */
  windows(): LaneWindow[];
}

/** Default for {@link SluiceFetchOptions.maxRetries}. */
export const DEFAULT_MAX_RETRIES = 6;

/** The jitter's span stops doubling here (or at the Retry-After itself, when that is longer). */
export const MAX_JITTER_SPAN_MS = 60_000;

/**
 * The wait before sending a refused call again: the gateway's Retry-After (the floor: it already
 * says when the line ahead will have drained), plus full jitter over a span of one Retry-After
 * that doubles with each refusal of the same call. Callers refused together come back spread
 * over the span instead of in one wave (AWS "Exponential Backoff and Jitter", 2015).
 */
export function retryDelayMs(retryAfterMs: number, retry: number, random: () => number): number {
  const span = Math.min(
    retryAfterMs * 2 ** Math.max(0, retry - 1),
    Math.max(retryAfterMs, MAX_JITTER_SPAN_MS),
  );
  return retryAfterMs + Math.min(Math.max(random(), 0), 1) * span;
}

/**
 * A `fetch` for a sluice gateway. Use it directly (`await sluiceFetch("/v1/embeddings", init)`)
 * or as the OpenAI SDK's: `new OpenAI({ baseURL: `${gw}/v1`, fetch: createSluiceFetch({ baseUrl: gw }) })`.
 *
 * @throws ConfigError naming the option when one is invalid.
 */
export function createSluiceFetch(options: SluiceFetchOptions): SluiceFetch {
  const baseUrl = parseBaseUrl(options.baseUrl);
  const priority = options.priority;
  if (priority !== undefined && !PRIORITIES.includes(priority))
    throw new ConfigError("priority", PRIORITIES.join(" | "), priority);
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  if (!Number.isInteger(maxRetries) || maxRetries < 0)
    throw new ConfigError("maxRetries", "an integer ≥ 0", maxRetries);
  const initialWindow = options.initialWindow ?? Number.POSITIVE_INFINITY;
  if (initialWindow !== Number.POSITIVE_INFINITY && (!Number.isInteger(initialWindow) || initialWindow < 1))
    throw new ConfigError("initialWindow", "an integer ≥ 1", initialWindow);
  const send: FetchLike = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const random = options.random ?? Math.random;
  const windows = new Map<string, ClientWindow>();
  const windowOf = (lane: string): ClientWindow => {
    let w = windows.get(lane);
    if (w === undefined) {
      w = new ClientWindow(initialWindow);
      windows.set(lane, w);
    }
    return w;
  };

  const sluiceFetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const original = input instanceof Request ? input : undefined;
    const url = original ? original.url : new URL(String(input), baseUrl).href;
    const signal = init.signal ?? original?.signal ?? undefined;
    signal?.throwIfAborted();
    const headers = new Headers(init.headers ?? original?.headers);
    if (priority !== undefined && !headers.has("x-sluice-priority"))
      headers.set("x-sluice-priority", priority);
    const body = init.body ?? null;
    // A stream can be sent once; a Request's own body is cloned (teed) for each attempt instead.
    const replayable = original !== undefined || isReplayable(body);
    const window = windowOf(laneOf(headers, body));
    for (let retry = 0; ; retry++) {
      const slot = await window.acquire(signal, retry > 0);
      let res: Response;
      try {
        const target = original ? original.clone() : url;
        res = await send(target, { ...init, headers, ...(signal ? { signal } : {}) });
      } catch (error) {
        window.release(slot, "neutral");
        throw error;
      }
      const advertised = advertisedWindow(res.headers);
      if (advertised) window.advertise(advertised.width, advertised.queueLimit);
      const congested = res.status === 429;
      if (sluiceRefusal(res) === undefined || !replayable || retry >= maxRetries) {
        const outcome = congested ? "congestion" : res.status < 400 ? "success" : "neutral";
        return holdUntilEnd(res, window, slot, outcome);
      }
      window.release(slot, congested ? "congestion" : "neutral");
      const wait = retryDelayMs(retryAfterMsOf(res.headers), retry + 1, random);
      await res.body?.cancel().catch(() => undefined);
      await sleep(wait, signal);
    }
  };
  return Object.assign(sluiceFetch, {
    windows: (): LaneWindow[] => [...windows].map(([lane, w]) => ({ lane, ...w.snapshot() })),
  });
}

function parseBaseUrl(value: unknown): URL {
  let url: URL | undefined;
  try {
    url = new URL(String(value));
  } catch {
    url = undefined;
  }
  if (value === undefined || url === undefined || (url.protocol !== "http:" && url.protocol !== "https:"))
    throw new ConfigError("baseUrl", "an absolute http(s) URL, e.g. http://127.0.0.1:8080", value);
  return url;
}

/** Whether `body` can be sent again as it is (not a stream, which is read once). */
function isReplayable(body: RequestInit["body"] | null): boolean {
  if (body === null || body === undefined) return true;
  if (typeof body === "string" || body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return true;
  if (body instanceof Blob || body instanceof URLSearchParams || body instanceof FormData) return true;
  return false;
}

/**
 * The lane a call goes to, as far as the client can see: `X-Sluice-Model`, else the `model` of a
 * JSON or form body (what the gateway reads), else `""` (one shared window).
 */
function laneOf(headers: Headers, body: RequestInit["body"] | null): string {
  const header = headers.get("x-sluice-model");
  if (header !== null) return header;
  if (typeof body === "string" && body.startsWith("{")) {
    try {
      const model = (JSON.parse(body) as { model?: unknown }).model;
      if (typeof model === "string") return model;
    } catch {
      // Not JSON: the gateway will say so; the call shares the default window.
    }
  }
  if (body instanceof FormData) {
    const model = body.get("model");
    if (typeof model === "string") return model;
  }
  return "";
}

/**
 * `res` with its slot held until its body has ended (read to the end, cancelled, or failed): a
 * streamed answer holds its gateway slot that long, so it holds the window's too. Like any fetch
 * answer, its body must be read or cancelled to free it.
 */
function holdUntilEnd(res: Response, window: ClientWindow, slot: Slot, outcome: SlotOutcome): Response {
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    window.release(slot, outcome);
  };
  if (res.body === null) {
    release();
    return res;
  }
  const reader = res.body.getReader();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            release();
            controller.close();
          } else controller.enqueue(value);
        } catch (error) {
          release();
          controller.error(error);
        }
      },
      cancel(reason) {
        release();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  const held = new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  // A constructed Response has an empty `url`; callers (and SDKs' error messages) read it.
  Object.defineProperty(held, "url", { value: res.url });
  return held;
}

/** Resolves after `ms`, or rejects with `signal.reason` as soon as it aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
