import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";
import { ManualClock } from "../../core/clock.js";
import type { Snapshot } from "../../core/snapshot.js";
import { Governor } from "../../governor/governor.js";
import { PrometheusMetrics } from "../../metrics/prometheus.js";
import { serveMetrics } from "./metrics.js";
import { type SnapshotSource, serveLanes, TelemetryStreams } from "./telemetry.js";

const INTERVAL_MS = 20;

/** Counts snapshots taken, so a test can tell whether a stream's timer still runs. */
class CountingSource implements SnapshotSource {
  calls = 0;
  constructor(readonly governor: Governor) {}
  snapshot(): Snapshot {
    this.calls++;
    return this.governor.snapshot();
  }
}

/** Collects the SSE events of a body as they arrive, without consuming it to the end. */
class EventReader {
  readonly events: Snapshot[] = [];
  ended = false;
  #buffer = "";

  constructor(body: NodeJS.ReadableStream) {
    body.setEncoding("utf8");
    body.on("data", (chunk: string) => {
      this.#buffer += chunk;
      for (let end = this.#buffer.indexOf("\n\n"); end !== -1; end = this.#buffer.indexOf("\n\n")) {
        const event = this.#buffer.slice(0, end);
        this.#buffer = this.#buffer.slice(end + 2);
        assert.match(event, /^data: /);
        this.events.push(JSON.parse(event.slice("data: ".length)) as Snapshot);
      }
    });
    body.on("end", () => {
      this.ended = true;
    });
  }

  async waitFor(count: number): Promise<Snapshot[]> {
    await until(() => this.events.length >= count, `${count} events arrive`);
    return this.events;
  }
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await sleep(5);
  assert.ok(check(), what);
}

describe("telemetry routes", () => {
  const governor = new Governor({ clock: new ManualClock(), lanes: { chat: { limit: 2 } } });
  const source = new CountingSource(governor);
  const streams = new TelemetryStreams(source, INTERVAL_MS);
  const metrics = new PrometheusMetrics(governor);
  let server: Server;
  let base: string;

  before(async () => {
    server = createServer((req, res) => {
      if (req.url === "/api/telemetry/lanes") serveLanes(res, governor);
      else if (req.url === "/api/telemetry/stream") streams.serve(req, res);
      else if (req.url === "/metrics") void serveMetrics(res, metrics);
      else if (req.url === "/empty") serveLanes(res, new Governor());
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    streams.closeAll();
    metrics.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test("serves the snapshot as JSON", async () => {
    const lease = await governor.acquire("chat");
    const res = await request(`${base}/api/telemetry/lanes`);
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /^application\/json/);
    const body = (await res.body.json()) as Snapshot;
    assert.equal(body.enabled, true);
    assert.equal(body.lanes[0]!.lane, "chat");
    assert.equal(body.lanes[0]!.inflight, 1);
    lease.release();
  });

  test('says "enabled": false when there are no lanes', async () => {
    const res = await request(`${base}/empty`);
    const body = (await res.body.json()) as Snapshot;
    assert.equal(body.enabled, false);
    assert.deepEqual(body.lanes, []);
  });

  test("streams the snapshot as events and stops the timer when the client leaves", async () => {
    const res = await request(`${base}/api/telemetry/stream`);
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /^text\/event-stream/);
    assert.equal(res.headers["cache-control"], "no-cache");
    assert.equal(streams.size, 1);
    const events = await new EventReader(res.body).waitFor(2);
    assert.equal(events[1]!.lanes[0]!.lane, "chat");

    res.body.destroy();
    await until(() => streams.size === 0, "the stream is forgotten once the client disconnects");
    const calls = source.calls;
    await sleep(INTERVAL_MS * 4);
    assert.equal(source.calls, calls, "no snapshot is taken after the client left");
  });

  test("closeAll() ends every open stream", async () => {
    const a = await request(`${base}/api/telemetry/stream`);
    const b = await request(`${base}/api/telemetry/stream`);
    const readers = [new EventReader(a.body), new EventReader(b.body)];
    await Promise.all(readers.map((r) => r.waitFor(1)));
    assert.equal(streams.size, 2);
    streams.closeAll();
    assert.equal(streams.size, 0);
    // Both bodies end: the client sees the stream finish, not hang.
    await until(() => readers.every((r) => r.ended), "both streams end");
  });

  test("serves the Prometheus text with its content type", async () => {
    const res = await request(`${base}/metrics`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers["content-type"], metrics.contentType);
    const text = await res.body.text();
    assert.match(text, /^# TYPE sluice_lane_inflight gauge$/m);
    assert.match(text, /^sluice_lane_inflight\{lane="chat"\} 0$/m);
  });
});
