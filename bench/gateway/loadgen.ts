/**
 * The closed-loop load generator of the gateway benchmark, in its own process (so it never shares
 * an event loop with the proxy it measures). Each connection is one undici `Client` (keep-alive,
 * no pipelining) that sends a request, reads the answer to its last byte, records the latency and
 * sends the next. A refusal (429/503) or a transport error is followed by a fixed pause
 * (`backoffMs`), the same for every target.
 *
 * Driven over IPC: `{ type: "run", spec }` → `window` start/end marks, then `result`;
 * `{ type: "storm", storm }` runs the retry-storm client (storm.ts) → `storm-result`.
 */
import { Client } from "undici";
import type { LoadgenMessage, RunResult, RunSpec, StormMessage, StormSpec } from "./protocol.js";
import { runStorm } from "./storm.js";

const HEADERS = { "content-type": "application/json" };
/** After the window ends, requests still out are cut after this long. */
const GRACE_MS = 3000;

function send(message: LoadgenMessage | StormMessage): void {
  process.send?.(message);
}

/** Nearest-rank percentile of an ascending array, in the array's unit; NaN when empty. */
export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

class Samples {
  #a = new Float64Array(1 << 14);
  n = 0;
  push(v: number): void {
    if (this.n === this.#a.length) {
      const b = new Float64Array(this.#a.length * 2);
      b.set(this.#a);
      this.#a = b;
    }
    this.#a[this.n++] = v;
  }
  sorted(): Float64Array {
    return this.#a.slice(0, this.n).sort();
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function run(spec: RunSpec): Promise<RunResult> {
  const clients = Array.from(
    { length: spec.connections },
    (_, i) =>
      new Client(spec.urls[i % spec.urls.length]!, {
        pipelining: 1,
        keepAliveTimeout: 60_000,
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      }),
  );
  const ok = new Samples();
  const refused = new Samples();
  const statuses: Record<string, number> = {};
  let other = 0;
  let errors = 0;
  const t0 = performance.now();
  const from = t0 + spec.warmupMs;
  const to = from + spec.durationMs;
  let measuring = false;
  const startTimer = setTimeout(() => {
    measuring = true;
    send({ type: "window", phase: "start" });
  }, spec.warmupMs);
  const endTimer = setTimeout(() => {
    measuring = false;
    send({ type: "window", phase: "end" });
  }, spec.warmupMs + spec.durationMs);
  const request = { path: spec.path, method: "POST" as const, headers: HEADERS, body: spec.body };

  const loop = async (client: Client, i: number) => {
    if (spec.staggerMs > 0) await sleep((i * spec.staggerMs) / spec.connections);
    while (performance.now() < to) {
      const start = performance.now();
      let status = 0;
      try {
        const res = await client.request(request);
        status = res.statusCode;
        await res.body.dump({ limit: 1 << 24 });
      } catch {
        status = -1;
      }
      const end = performance.now();
      const inWindow = measuring && end >= from && end < to;
      if (inWindow) {
        const ms = end - start;
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status === 200) ok.push(ms);
        else if (status === 429 || status === 503) refused.push(ms);
        else if (status === -1) errors++;
        else other++;
      }
      if (status !== 200 && performance.now() < to) await sleep(spec.backoffMs);
    }
  };
  const all = Promise.all(clients.map((c, i) => loop(c, i)));
  const cut = new Promise<void>((resolve) => {
    const t = setTimeout(resolve, spec.warmupMs + spec.durationMs + GRACE_MS);
    void all.then(() => clearTimeout(t));
  });
  await Promise.race([all, cut]);
  clearTimeout(startTimer);
  clearTimeout(endTimer);
  await Promise.all(clients.map((c) => c.destroy().catch(() => undefined)));
  const okSorted = ok.sorted();
  const refusedSorted = refused.sorted();
  return {
    seconds: spec.durationMs / 1000,
    ok: ok.n,
    refused: refused.n,
    other,
    errors,
    okP50Ms: percentile(okSorted, 0.5),
    okP99Ms: percentile(okSorted, 0.99),
    refusedP50Ms: percentile(refusedSorted, 0.5),
    refusedP99Ms: percentile(refusedSorted, 0.99),
    statuses,
  };
}

if (process.send !== undefined) {
  process.on("message", (m: { type: string; spec?: RunSpec; storm?: StormSpec }) => {
    if (m.type === "storm" && m.storm !== undefined) {
      runStorm(m.storm).then(
        (result) => send({ type: "storm-result", result }),
        (error: unknown) => send({ type: "error", message: String(error) }),
      );
    } else if (m.type === "run" && m.spec !== undefined) {
      run(m.spec).then(
        (result) => send({ type: "result", result }),
        (error: unknown) => send({ type: "error", message: String(error) }),
      );
    } else if (m.type === "exit") {
      process.exit(0);
    }
  });
  process.on("disconnect", () => process.exit(0));
}
