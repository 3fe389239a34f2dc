/** Shared helpers for the simulator's tests: real sockets through undici, no sleeps. */
import { setTimeout as delay } from "node:timers/promises";
import { request } from "undici";

/**
 * Polls `predicate` until true; fails naming `what` after `timeoutMs` (a bound for a hang, not an
 * assertion on time: generous for a loaded 2-core machine, like test/gateway/helpers.ts's).
 */
export async function waitFor(what: string, predicate: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(1);
  }
}

/** A chat request body with one user message. */
export function chatBody(content: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model: "m", messages: [{ role: "user", content }], ...extra });
}

/** POSTs `body` to `url + path` and returns status, headers and the full text. */
export async function post(
  url: string,
  path: string,
  body: string,
  opts: { signal?: AbortSignal; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const res = await request(`${url}${path}`, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", ...opts.headers },
    signal: opts.signal,
  });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

/** GETs `url + path` as text. */
export async function get(url: string, path: string): Promise<{ status: number; text: string }> {
  const res = await request(`${url}${path}`);
  return { status: res.statusCode, text: await res.body.text() };
}

/** Starts a chat request that is expected to be aborted; its rejection is swallowed. */
export function held(url: string, signal: AbortSignal, content = "hold"): Promise<unknown> {
  return post(url, "/v1/chat/completions", chatBody(content), { signal }).catch((e: unknown) => e);
}

/** The `data:` payloads of an SSE body, in order. */
export function sseData(text: string): string[] {
  return text
    .split("\n\n")
    .filter((event) => event.startsWith("data: "))
    .map((event) => event.slice("data: ".length));
}
