/**
 * Counting pods: a fake OpenAI-compatible model server that runs every call it gets (it never
 * queues or refuses, so whatever the gateways let through is what it counts) and tells the
 * ledger when each call starts and ends, by the call id the traffic put in `x-chaos-call`. It
 * answers plain JSON or an SSE stream over the call's planned time (`x-chaos-ms`), and serves
 * vLLM's `/metrics` (`vllm:num_requests_running`), so a gateway that polls it sees the pod's own
 * count.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Gauge, Ledger } from "./ledger.js";

export class CountingPod {
  url = "";
  running = 0;
  readonly #server: Server;
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor(
    readonly name: string,
    readonly ledger: Ledger,
    /** The gauges every call here takes besides the key's: the lane and this pod. */
    readonly budgets: readonly Gauge[],
    /** The gauge of a bounded key, by key id (a key without a bound has none). */
    readonly keyGauges: ReadonlyMap<string, Gauge>,
  ) {
    this.#server = createServer((req, res) => this.#onRequest(req, res));
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const t of this.#timers) clearTimeout(t);
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    if (req.method === "GET" && req.url === "/metrics") {
      res.setHeader("content-type", "text/plain; version=0.0.4");
      res.end(
        `vllm:num_requests_running{model_name="m"} ${this.running}\n` +
          'vllm:num_requests_waiting{model_name="m"} 0\n',
      );
      return;
    }
    if (req.method !== "POST") {
      res.statusCode = 404;
      res.end();
      return;
    }
    const id = String(req.headers["x-chaos-call"] ?? "?");
    const serviceMs = Number(req.headers["x-chaos-ms"] ?? 100);
    const key = String(req.headers["x-chaos-key"] ?? "");
    const keyGauge = this.keyGauges.get(key);
    const budgets = keyGauge === undefined ? this.budgets : [...this.budgets, keyGauge];
    // Counted from the moment the request arrives: that is when a real pod's slot is taken.
    this.running++;
    this.ledger.podStarted(id, this.name, budgets);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      this.running--;
      this.ledger.podEnded(id, budgets);
    };
    res.on("close", end); // answered in full, or the gateway cut the call: either way it ends
    req.resume();
    const stream = req.headers["x-chaos-stream"] === "1";
    req.on("end", () => this.#answer(res, serviceMs, stream));
  }

  #answer(res: ServerResponse, serviceMs: number, stream: boolean): void {
    const body = (content: string) =>
      JSON.stringify({
        id: "chaos",
        object: "chat.completion",
        model: "m",
        choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
        usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
      });
    if (!stream) {
      this.#after(serviceMs, () => {
        res.setHeader("content-type", "application/json");
        res.end(body("ok"));
      });
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const chunks = Math.max(1, Math.round(serviceMs / 100));
    let sent = 0;
    const tick = () => {
      if (res.destroyed) return;
      const delta = {
        id: "chaos",
        object: "chat.completion.chunk",
        model: "m",
        choices: [{ index: 0, delta: { content: "x" } }],
      };
      res.write(`data: ${JSON.stringify(delta)}\n\n`);
      if (++sent < chunks) this.#after(serviceMs / chunks, tick);
      else res.end("data: [DONE]\n\n");
    };
    this.#after(serviceMs / chunks, tick);
  }

  #after(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.#timers.delete(t);
      fn();
    }, ms);
    this.#timers.add(t);
  }
}
