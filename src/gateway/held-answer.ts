/**
 * A pod's answer that its config lists as "not started" (`pods[].redispatch_statuses`), held —
 * not forwarded — while dispatch decides whether the call goes to another pod. If it goes nowhere
 * else, the client gets this answer.
 */
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import { sendUpstreamError } from "./http-error.js";
import { flatResponseHeaders } from "./upstreams.js";

/**
 * The most of a held answer's body kept. Past it the pod's call is aborted and the rest never
 * read: two 503s with 200 MiB bodies must not cost the gateway 400 MiB (issue 8).
 */
export const MAX_HELD_BYTES = 64 * 1024;
/** Why the pod's call was aborted past {@link MAX_HELD_BYTES}. */
export const HELD_TOO_LARGE = new Error(
  `overload answer body past ${MAX_HELD_BYTES} bytes; the rest was not read`,
);

export class HeldAnswer {
  readonly #chunks: Buffer[] = [];
  #bytes = 0;
  /**
   * Why its body was not read to the end (longer than {@link MAX_HELD_BYTES}, or the pod failed
   * mid-body); undefined when it was read whole.
   */
  incomplete: string | undefined = undefined;

  constructor(
    readonly status: number,
    readonly headers: IncomingHttpHeaders,
  ) {}

  /** Keeps `chunk`; false (and `incomplete` set) when it would pass the bound. */
  take(chunk: Buffer): boolean {
    if (this.#bytes + chunk.length > MAX_HELD_BYTES) {
      this.incomplete = HELD_TOO_LARGE.message;
      return false;
    }
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
    return true;
  }

  /**
   * Sends it to the client with sluice's `extra` headers; returns the body bytes sent. An answer
   * read only in part is said in a sentence, with its Retry-After, rather than as half a body.
   */
  send(res: ServerResponse, extra: Record<string, string | number>, lane: string): number {
    if (this.incomplete !== undefined) {
      const retryAfter = this.headers["retry-after"];
      if (typeof retryAfter === "string") extra["retry-after"] = retryAfter;
      const message = `the model server is overloaded (it answered ${this.status})`;
      sendUpstreamError(res, this.status, "upstream_error", message, lane, extra);
      return 0;
    }
    const body = Buffer.concat(this.#chunks, this.#bytes);
    res.writeHead(this.status, flatResponseHeaders(this.headers, extra));
    res.end(body);
    return body.length;
  }
}
