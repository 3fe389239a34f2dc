/**
 * The Node floor for the gateway benchmark: node:http in front of one keep-alive undici `Pool`
 * per pod (`connections` = the per-pod limit, so a pod never runs more; the rest wait in undici's
 * unbounded queue), pods taken round-robin, the body streamed through both ways, hop-by-hop
 * headers dropped. No admission, no parsing, no accounting: the least a Node proxy can do.
 *
 *   node --import tsx bench/gateway/bare-proxy.ts '<BareListener[] as JSON>' [lean]
 *
 * A listener with `queueLimit` answers a fixed 429 once that many requests wait beyond the pods'
 * slots (a counter, no more): the floor of a Node proxy refusing under a retry storm.
 *
 * `lean` swaps `pool.request()` + async iteration of the body for undici's handler API
 * (`pool.dispatch()` with onResponseStart/onResponseData/onResponseEnd written straight to the
 * response, the small request body read first and sent as one Buffer): no body Readable, no
 * async iterator, no promise per call, no AbortSignal. It shows what the Node floor is with the
 * cheapest undici path; the bench runs it only with `--lean`.
 *
 * Sends `{ type: "ready", urls }` over IPC (one URL per listener) when listening.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Dispatcher, Pool } from "undici";
import type { BareListener, ReadyMessage } from "./protocol.js";

const HOP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "trailer",
  "upgrade",
  "proxy-connection",
]);

/** The bounded listener's refusal: one fixed answer, rendered once. */
const REFUSAL_BODY = Buffer.from('{"error":{"type":"overloaded","code":"queue_full"}}');
const REFUSAL_HEADERS = ["content-type", "application/json", "content-length", String(REFUSAL_BODY.length)];

function listener(spec: BareListener) {
  const pools = spec.pods.map(
    (url) => new Pool(url, { connections: spec.perPod, pipelining: 1, keepAliveTimeout: 30_000 }),
  );
  let next = 0;
  const bound = spec.queueLimit === undefined ? Infinity : spec.pods.length * spec.perPod + spec.queueLimit;
  let held = 0;
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (held >= bound) {
      res.writeHead(429, REFUSAL_HEADERS);
      res.end(REFUSAL_BODY);
      return;
    }
    held++;
    res.once("close", () => held--);
    const pool = pools[next++ % pools.length]!;
    const headers: Record<string, string> = {};
    const type = req.headers["content-type"];
    const length = req.headers["content-length"];
    if (type !== undefined) headers["content-type"] = type;
    if (length !== undefined) headers["content-length"] = length;
    try {
      const answer = await pool.request({
        path: req.url ?? "/",
        method: req.method as Dispatcher.HttpMethod,
        headers,
        body: req,
      });
      const out: Record<string, string | string[]> = {};
      for (const name in answer.headers) {
        const v = answer.headers[name];
        if (v !== undefined && !HOP.has(name)) out[name] = v;
      }
      res.writeHead(answer.statusCode, out);
      for await (const chunk of answer.body as AsyncIterable<Buffer>) res.write(chunk);
      res.end();
    } catch {
      if (res.headersSent) res.destroy();
      else {
        res.writeHead(502, { "content-length": 0 });
        res.end();
      }
    }
  };
}

/** One call through `pool.dispatch()`: the handler writes the answer straight to `res`. */
class LeanHandler implements Dispatcher.DispatchHandler {
  constructor(readonly res: ServerResponse) {}
  onRequestStart(): void {}
  onResponseStart(
    controller: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    const out: Record<string, string | string[]> = {};
    for (const name in headers) {
      const v = headers[name];
      if (v !== undefined && !HOP.has(name)) out[name] = v;
    }
    this.res.writeHead(status, out);
    this.res.on("drain", () => controller.resume());
  }
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.res.write(chunk)) controller.pause();
  }
  onResponseEnd(): void {
    this.res.end();
  }
  onResponseError(_controller: Dispatcher.DispatchController, _error: Error): void {
    if (this.res.headersSent) this.res.destroy();
    else {
      this.res.writeHead(502, { "content-length": 0 });
      this.res.end();
    }
  }
}

function leanListener(spec: BareListener) {
  const pools = spec.pods.map(
    (url) => new Pool(url, { connections: spec.perPod, pipelining: 1, keepAliveTimeout: 30_000 }),
  );
  let next = 0;
  return (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const pool = pools[next++ % pools.length]!;
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const headers: Record<string, string> = { "content-length": String(body.length) };
      const type = req.headers["content-type"];
      if (type !== undefined) headers["content-type"] = type;
      pool.dispatch(
        { path: req.url ?? "/", method: req.method as Dispatcher.HttpMethod, headers, body },
        new LeanHandler(res),
      );
    });
  };
}

const specs = JSON.parse(process.argv[2] ?? "[]") as BareListener[];
const lean = process.argv[3] === "lean";
const urls: string[] = [];
for (const spec of specs) {
  const server = createServer({ keepAliveTimeout: 5000 }, lean ? leanListener(spec) : listener(spec));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  urls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
}
process.send?.({ type: "ready", urls } satisfies ReadyMessage);
process.on("disconnect", () => process.exit(0));
process.on("SIGTERM", () => process.exit(0));
