/**
 * A gateway on a thread of its own, for `sluice load`: the clients and the simulated pods run on
 * the main thread, so the gateway gets a core of its own as it would as its own process, and the
 * latencies it is measured on are not the load generator's. Started by `startGatewayThread`
 * (gateway-thread.ts) with a raw config; answers `{ url }` once listening, and closes on
 * `"close"`.
 */
import { parentPort, workerData } from "node:worker_threads";
import { pino } from "pino";
import { parseConfig } from "../config/schema.js";
import { Gateway } from "../gateway/gateway.js";

const { config, source } = workerData as { config: unknown; source: string };
const port = parentPort!;
try {
  const gateway = new Gateway({ config: parseConfig(config, source), logger: pino({ level: "silent" }) });
  const url = await gateway.listen(0, "127.0.0.1");
  port.on("message", (m: unknown) => {
    if (m !== "close") return;
    void gateway.close().then(() => {
      port.postMessage({ closed: true });
      port.close();
    });
  });
  port.postMessage({ url });
} catch (e) {
  port.postMessage({ error: e instanceof Error ? e.message : String(e) });
  port.close();
}
