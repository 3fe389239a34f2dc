/**
 * `GET /metrics`: sluice's Prometheus text (DESIGN §3.3, §4), rendered by `PrometheusMetrics`,
 * whose gauges read the governor's snapshot at this moment.
 */
import type { ServerResponse } from "node:http";
import type { PrometheusMetrics } from "../../metrics/prometheus.js";

/** Writes 200 with the Prometheus text format; a render failure answers 500 with its message. */
export async function serveMetrics(
  res: ServerResponse,
  metrics: Pick<PrometheusMetrics, "render" | "contentType">,
): Promise<void> {
  let body: string;
  try {
    body = await metrics.render();
  } catch (error) {
    const message = `metrics failed to render: ${(error as Error).message}\n`;
    res.writeHead(500, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" });
    res.end(message);
    return;
  }
  res.writeHead(200, {
    "content-type": metrics.contentType,
    "content-length": Buffer.byteLength(body),
    "cache-control": "no-store",
  });
  res.end(body);
}
