/**
 * Starts `gateway-worker.ts` on a worker thread and returns its URL and a close. The config is
 * validated on the main thread first, so a bad profile config fails with its `ConfigError`
 * before any thread starts.
 */
import { Worker } from "node:worker_threads";
import { parseConfig } from "../config/schema.js";

/** A gateway running on its own thread. */
export interface GatewayThread {
  url: string;
  close(): Promise<void>;
}

/** Starts a gateway on a worker thread with `config` (raw, as `parseConfig` takes it). */
export async function startGatewayThread(
  config: Record<string, unknown>,
  source: string,
): Promise<GatewayThread> {
  parseConfig(config, source);
  const worker = spawn({ config, source });
  const first = await new Promise<{ url?: string; error?: string }>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`the gateway thread exited (${code}) before listening`)));
  });
  if (first.url === undefined) {
    await worker.terminate();
    throw new Error(`the gateway thread failed to start: ${first.error ?? "no reason given"}`);
  }
  let closing: Promise<void> | null = null;
  return {
    url: first.url,
    close() {
      closing ??= new Promise<void>((resolve) => {
        worker.once("exit", () => resolve());
        worker.once("message", () => void worker.terminate());
        worker.postMessage("close");
      });
      return closing;
    },
  };
}

/**
 * Built, the worker is the .js file beside this one. Run from source (tsx), a worker thread does
 * not inherit tsx's loader on Node 20, so a two-line bootstrap registers it and then imports the
 * .ts file.
 */
function spawn(workerData: unknown): Worker {
  if (!import.meta.url.endsWith(".ts")) {
    return new Worker(new URL("./gateway-worker.js", import.meta.url), { workerData });
  }
  const file = new URL("./gateway-worker.ts", import.meta.url).href;
  const tsx = import.meta.resolve("tsx/esm/api");
  const code = `import(${JSON.stringify(tsx)}).then((t) => { t.register(); return import(${JSON.stringify(file)}); });`;
  return new Worker(code, { eval: true, workerData });
}
