/**
 * One pod answer on its way to the client (dispatch's `onResponse*` callbacks): the head with
 * sluice's headers, each chunk through the usage tap (`usage.ts`: usage read as it passes; on a
 * metered stream the generated text counted, and the usage sluice asked for removed) and then to
 * the client with bounded backpressure (`client-flow.ts`).
 */
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { ClientFlow } from "./client-flow.js";
import { flatResponseHeaders } from "./upstreams.js";
import { type TokenUsage, UsageTap } from "./usage.js";

/** What the call's own state says about how its answer is read. */
export interface AnswerReading {
  /** The client asked for a stream (`stream: true`). */
  readonly stream: boolean;
  /** A token budget is on the call's path: usage and generated text are read. */
  readonly metered: boolean;
  /** Sluice asked the pod for the stream's usage: the client does not get it. */
  readonly strip: boolean;
}

export class ForwardedAnswer {
  readonly tap: UsageTap;
  readonly #flow: ClientFlow;

  /** Writes the head of the pod's answer (`status`, `headers`) with sluice's `extra` headers. */
  constructor(
    readonly res: ServerResponse,
    status: number,
    headers: IncomingHttpHeaders,
    extra: Record<string, string | number>,
    reading: AnswerReading,
    /** Called once the client has accepted nothing for the idle bound (`ClientFlow`). */
    onStalled: () => void,
  ) {
    const sse = reading.stream || String(headers["content-type"] ?? "").includes("event-stream");
    // A compressed answer (a pod that ignored the identity asked for) cannot be read: its usage is
    // not found and its text not counted, so it keeps its estimate.
    const encoding = headers["content-encoding"];
    const plain = encoding === undefined || encoding === "identity";
    const strip = reading.strip && sse && plain && status < 300;
    // Stripping changes the length: the answer goes chunked.
    const forwarded = strip && headers["content-length"] !== undefined ? withoutLength(headers) : headers;
    res.writeHead(status, flatResponseHeaders(forwarded, extra));
    // Head, body and end of a small answer usually arrive in one tick: send them in one write.
    res.cork();
    process.nextTick(uncork, res);
    this.tap = new UsageTap(sse, { count: reading.metered && plain, strip });
    this.#flow = new ClientFlow(res, onStalled);
  }

  /**
   * Forwards a chunk; while the client takes nothing more the pod is not read (`controller`
   * paused), for at most `idleMs`.
   */
  data(chunk: Buffer, controller: Dispatcher.DispatchController, idleMs: number): void {
    const out = this.tap.push(chunk);
    if (out.length > 0) this.#flow.write(out, controller, idleMs);
  }

  /**
   * The pod's answer ended: ends the client's, and returns the usage it carried (`promptEstimate`
   * for a prompt count it did not name).
   */
  end(promptEstimate: number): TokenUsage | undefined {
    this.#flow.stop();
    const rest = this.tap.end();
    if (rest === null) this.res.end();
    else this.res.end(rest);
    return this.tap.usage(promptEstimate);
  }

  /** The answer failed or was given up: stops watching the client. */
  stop(): void {
    this.#flow.stop();
  }
}

function uncork(res: ServerResponse): void {
  res.uncork();
}

/** The answer's headers without its `content-length` (an answer whose bytes sluice changes). */
function withoutLength(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const { "content-length": _, ...rest } = headers;
  return rest;
}
