/**
 * `GET /api/telemetry/lanes` (the snapshot, DESIGN §4) and `GET /api/telemetry/stream` (the same
 * snapshot as Server-Sent Events, once a second). A stream's timer is unref'd, so it never keeps
 * the process alive, and stops when the client goes away; `TelemetryStreams.closeAll()` ends every
 * open stream at shutdown, so draining connections can finish.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Snapshot } from "../../core/snapshot.js";

/** What the telemetry routes read: a `Governor` or anything with its `snapshot()`. */
export interface SnapshotSource {
  snapshot(): Snapshot;
}

/** Interval between two events of a stream. **Default:** 1000 ms (DESIGN §3.3). */
export const STREAM_INTERVAL_MS = 1000;

/** `GET /api/telemetry/lanes`: 200 with the snapshot as JSON (`"enabled": false` with no lanes). */
export function serveLanes(res: ServerResponse, governor: SnapshotSource): void {
  const body = JSON.stringify(governor.snapshot());
  res.writeHead(200, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
    "cache-control": "no-store",
  });
  res.end(body);
}

/** One open event stream. */
export interface LaneStream {
  /** Stops the timer and ends the response. Idempotent. */
  close(): void;
  /** True once the stream stopped (client gone, closed, or write error). */
  readonly closed: boolean;
}

/**
 * `GET /api/telemetry/stream`: Server-Sent Events, one `data: <snapshot json>` at once and then
 * one per `intervalMs`. A slow reader skips ticks rather than buffering snapshots.
 */
export function serveLaneStream(
  req: IncomingMessage,
  res: ServerResponse,
  governor: SnapshotSource,
  intervalMs = STREAM_INTERVAL_MS,
  onClose?: () => void,
): LaneStream {
  let closed = false;
  const send = () => {
    // Backpressure: while the socket has not drained, a new snapshot would only pile up.
    if (closed || res.writableNeedDrain) return;
    res.write(`data: ${JSON.stringify(governor.snapshot())}\n\n`);
  };
  const timer = setInterval(send, intervalMs);
  timer.unref();
  const stop = () => {
    if (closed) return;
    closed = true;
    clearInterval(timer);
    req.off("close", stop);
    res.off("close", stop);
    res.off("error", stop);
    onClose?.();
  };
  // The client went away (req) or the response ended or failed (res): either stops the timer.
  req.once("close", stop);
  res.once("close", stop);
  res.once("error", stop);
  if (req.destroyed || res.destroyed)
    stop(); // gone before we started: its 'close' already fired
  else {
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      // Proxies such as nginx would otherwise buffer the stream.
      "x-accel-buffering": "no",
    });
    send();
  }
  return {
    close() {
      stop();
      if (!res.writableEnded) res.end();
    },
    get closed() {
      return closed;
    },
  };
}

/** The gateway's open telemetry streams, so shutdown can end them all. */
export class TelemetryStreams {
  readonly #open = new Set<LaneStream>();

  constructor(
    readonly governor: SnapshotSource,
    /** Interval between events. **Default:** 1000 ms. */
    readonly intervalMs = STREAM_INTERVAL_MS,
  ) {}

  /** Streams currently open. */
  get size(): number {
    return this.#open.size;
  }

  /** Serves one `GET /api/telemetry/stream` request. */
  serve(req: IncomingMessage, res: ServerResponse): LaneStream {
    const stream: LaneStream = serveLaneStream(req, res, this.governor, this.intervalMs, () =>
      this.#open.delete(stream),
    );
    if (!stream.closed) this.#open.add(stream);
    return stream;
  }

  /** Ends every open stream (on shutdown, before `server.close()` waits for connections). */
  closeAll(): void {
    for (const stream of [...this.#open]) stream.close();
  }
}
