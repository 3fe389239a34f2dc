/**
 * Several sims started together, grouped by model: the upstreams of the gateway's `--demo`
 * config and of multi-pod tests. Pods take consecutive ports from `basePort` in declaration
 * order, so a config can name their URLs before they start (`demoFleetUrls`).
 */
import type { SimOptions } from "./options.js";
import { type SimServer, startSim } from "./server.js";

/** Which pods to start. */
export interface FleetSpec {
  /** Model name → one entry per pod. A pod's `model` defaults to the key; `port` is ignored. */
  models: Readonly<Record<string, readonly SimOptions[]>>;
  /** First port; pods take `basePort`, `basePort + 1`, … in order. `0` = each picks a free port. **Default:** `0`. */
  basePort?: number;
  /** Address every pod listens on. **Default:** `"127.0.0.1"`. */
  host?: string;
}

/** One started pod. */
export interface FleetPod {
  model: string;
  url: string;
  sim: SimServer;
}

/** A started fleet. */
export interface SimFleet {
  /** Every pod, in declaration order. */
  readonly pods: readonly FleetPod[];
  /** Model name → its pods' URLs, in declaration order. */
  readonly urls: Readonly<Record<string, string[]>>;
  /** Closes every pod. */
  close(): Promise<void>;
}

/** Starts every pod of `spec`; if one fails to start, closes the others and rethrows. */
export async function startFleet(spec: FleetSpec): Promise<SimFleet> {
  const basePort = spec.basePort ?? 0;
  const plan: Array<{ model: string; opts: SimOptions }> = [];
  for (const [model, pods] of Object.entries(spec.models)) {
    for (const pod of pods) {
      const port = basePort === 0 ? 0 : basePort + plan.length;
      plan.push({ model, opts: { model, ...pod, port, host: spec.host ?? pod.host } });
    }
  }
  const started = await Promise.allSettled(plan.map((p) => startSim(p.opts)));
  const failure = started.find((s) => s.status === "rejected");
  if (failure !== undefined) {
    await Promise.all(started.map((s) => (s.status === "fulfilled" ? s.value.close() : undefined)));
    throw (failure as PromiseRejectedResult).reason;
  }
  const pods = plan.map((p, i) => {
    const sim = (started[i] as PromiseFulfilledResult<SimServer>).value;
    return { model: p.model, url: sim.url, sim };
  });
  const urls: Record<string, string[]> = {};
  for (const pod of pods) {
    urls[pod.model] ??= [];
    urls[pod.model]!.push(pod.url);
  }
  return {
    pods,
    urls,
    close: async () => {
      await Promise.all(pods.map((p) => p.sim.close()));
    },
  };
}

/** The demo fleet's first port (`sluice sim --fleet demo`, `sluice serve --demo`). */
export const DEMO_BASE_PORT = 9100;

/**
 * The demo fleet: a chat model on two vLLM-like pods that answer 503 past 4 waiting, an
 * embedding model on one fast pod, and an OCR pod (path prefix `/ocr/`) that refuses
 * connections past 2 running + 2 waiting. Numbers are chosen so a few dozen clients visibly
 * queue and get refused in the dashboard.
 */
export const DEMO_FLEET: FleetSpec["models"] = Object.freeze({
  "demo-chat": [
    { maxNumSeqs: 8, maxWaiting: 4, overflow: "503", serviceMs: 300, tokensPerSecond: 50, seed: 1 },
    { maxNumSeqs: 8, maxWaiting: 4, overflow: "503", serviceMs: 300, tokensPerSecond: 50, seed: 2 },
  ],
  "demo-embed": [{ maxNumSeqs: 16, serviceMs: 20, seed: 3 }],
  "demo-ocr": [
    {
      maxNumSeqs: 2,
      maxWaiting: 2,
      overflow: "refuse",
      listenBacklog: 8,
      serviceMs: 250,
      echoPrefix: "/ocr/",
      seed: 4,
    },
  ],
});

/** Starts the demo fleet. Tests pass `basePort: 0`. */
export function demoFleet(opts: { basePort?: number; host?: string } = {}): Promise<SimFleet> {
  return startFleet({ models: DEMO_FLEET, basePort: opts.basePort ?? DEMO_BASE_PORT, host: opts.host });
}

/** The demo pods' URLs by model for a `basePort` (> 0), without starting them: for the embedded demo config. */
export function demoFleetUrls(basePort = DEMO_BASE_PORT, host = "127.0.0.1"): Record<string, string[]> {
  const urls: Record<string, string[]> = {};
  let port = basePort;
  for (const [model, pods] of Object.entries(DEMO_FLEET)) {
    urls[model] = pods.map(() => `http://${host}:${port++}`);
  }
  return urls;
}
