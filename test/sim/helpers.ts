/**
 * The simulator's tests' own helpers: requests to a sim through undici. What they share with other
 * folders' tests (waitFor, chatBody, sseData) is in test/helpers.
 */
import { request } from "undici";
import { chatBody } from "../helpers/index.js";

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
  return post(url, "/v1/chat/completions", chatBody("m", content), { signal }).catch((e: unknown) => e);
}
