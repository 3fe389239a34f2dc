/**
 * The retry-storm client of the gateway benchmark: raw keep-alive sockets with a request
 * rendered once, and an HTTP/1.1 answer reader that knows just enough (status, Content-Length,
 * chunked bodies, Connection: close, Retry-After). A Node client on undici costs the proxy's
 * neighbours more CPU than the proxy spends per refusal; this one spends a few µs per answer, so
 * the storm is set by the proxy, as it is with wrk. Unlike wrk it splits latency by status and by
 * kind of client.
 *
 * A storm connection sends its next request the moment the previous answer is complete, whatever
 * it was (a client retrying at once after a 429). A polite connection waits Retry-After after a
 * refusal. Runs inside the load generator process (loadgen.ts).
 */
import { connect, type Socket } from "node:net";
import type { StormResult, StormSide, StormSpec } from "./protocol.js";

const CRLFCRLF = Buffer.from("\r\n\r\n");
const CRLF = Buffer.from("\r\n");
/** After the window ends, requests still out are cut after this long. */
const GRACE_MS = 3000;
/** A connection that failed waits this long before it connects again (no hot loop on a dead port). */
const RECONNECT_MS = 20;

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
  quantile(q: number): number {
    if (this.n === 0) return Number.NaN;
    const s = this.#a.slice(0, this.n).sort();
    return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
  }
}

class Side {
  readonly ok = new Samples();
  readonly refused = new Samples();
  other = 0;
  errors = 0;
  result(): StormSide {
    return {
      ok: this.ok.n,
      refused: this.refused.n,
      other: this.other,
      errors: this.errors,
      okP50Ms: this.ok.quantile(0.5),
      okP99Ms: this.ok.quantile(0.99),
      refusedP50Ms: this.refused.quantile(0.5),
      refusedP99Ms: this.refused.quantile(0.99),
    };
  }
}

/** What the reader knows of the answer being read. */
const Stage = { Head: 0, Length: 1, ChunkSize: 2, ChunkData: 3, Done: 4 } as const;
type Stage = (typeof Stage)[keyof typeof Stage];

/** An ASCII header value as a number; NaN when it is not one. */
function numberAt(buf: Buffer, from: number, to: number): number {
  return Number(buf.toString("latin1", from, to).trim());
}

export function runStorm(spec: StormSpec): Promise<StormResult> {
  const storm = new Side();
  const polite = new Side();
  const allOk = new Samples();
  const statuses: Record<string, number> = {};
  let reconnects = 0;
  const requests = spec.urls.map((origin) => {
    const u = new URL(origin);
    const body = Buffer.from(spec.body);
    return {
      port: Number(u.port),
      host: u.hostname,
      bytes: Buffer.concat([
        Buffer.from(
          `POST ${spec.path} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
        ),
        body,
      ]),
    };
  });
  const t0 = performance.now();
  const from = t0 + spec.warmupMs;
  const to = from + spec.durationMs;
  let measuring = false;
  const total = spec.connections + spec.polite;

  return new Promise((resolve) => {
    const conns: Conn[] = [];
    let open = total;
    const finished = () => {
      if (--open > 0) return;
      clearTimeout(cut);
      for (const c of conns) c.socket?.destroy();
      resolve({
        seconds: spec.durationMs / 1000,
        storm: storm.result(),
        polite: polite.result(),
        okP99Ms: allOk.quantile(0.99),
        reconnects,
        statuses,
      });
    };

    class Conn {
      socket: Socket | null = null;
      readonly side: Side;
      readonly request: (typeof requests)[number];
      stage: Stage = Stage.Done;
      pending: Buffer | null = null;
      status = 0;
      remaining = 0;
      chunked = false;
      close = false;
      retryAfterMs = Number.NaN;
      sentAt = 0;
      done = false;

      constructor(
        readonly i: number,
        readonly isPolite: boolean,
      ) {
        this.side = isPolite ? polite : storm;
        this.request = requests[i % requests.length]!;
      }

      connectAndSend(): void {
        if (this.done) return;
        const s = connect(this.request.port, this.request.host);
        s.setNoDelay(true);
        this.socket = s;
        // A request written before the connection is up waits in the socket; its latency counts
        // from the connect (a listener's accept queue is not what this measures).
        s.once("connect", () => {
          this.sentAt = performance.now();
        });
        s.on("data", (chunk: Buffer) => this.onData(chunk));
        s.on("error", () => undefined);
        s.on("close", () => {
          if (this.socket !== s) return;
          this.socket = null;
          if (this.stage !== Stage.Done) this.failed();
        });
        this.send();
      }

      send(): void {
        if (this.done) return;
        if (performance.now() >= to) {
          this.finish();
          return;
        }
        if (this.socket === null) {
          this.connectAndSend();
          return;
        }
        this.stage = Stage.Head;
        this.pending = null;
        this.sentAt = performance.now();
        this.socket.write(this.request.bytes);
      }

      finish(): void {
        if (this.done) return;
        this.done = true;
        this.socket?.destroy();
        this.socket = null;
        finished();
      }

      failed(): void {
        this.stage = Stage.Done;
        if (measuring) {
          this.side.errors++;
          statuses["-1"] = (statuses["-1"] ?? 0) + 1;
        }
        if (performance.now() >= to) {
          this.finish();
          return;
        }
        setTimeout(() => this.connectAndSend(), RECONNECT_MS);
      }

      onData(chunk: Buffer): void {
        let buf = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
        this.pending = null;
        let at = 0;
        for (;;) {
          if (this.stage === Stage.Head) {
            const end = buf.indexOf(CRLFCRLF, at);
            if (end === -1) break;
            this.readHead(buf, at, end);
            at = end + 4;
            this.stage = this.chunked ? Stage.ChunkSize : Stage.Length;
            if (!this.chunked && this.remaining === 0) this.stage = Stage.Done;
          } else if (this.stage === Stage.Length) {
            const take = Math.min(this.remaining, buf.length - at);
            this.remaining -= take;
            at += take;
            if (this.remaining > 0) break;
            this.stage = Stage.Done;
          } else if (this.stage === Stage.ChunkSize) {
            const eol = buf.indexOf(CRLF, at);
            if (eol === -1) break;
            const size = Number.parseInt(buf.toString("latin1", at, eol), 16);
            at = eol + 2;
            // The last chunk: its size line, then (no trailers) one empty line.
            this.remaining = size === 0 ? 2 : size + 2;
            this.stage = size === 0 ? Stage.Length : Stage.ChunkData;
          } else if (this.stage === Stage.ChunkData) {
            const take = Math.min(this.remaining, buf.length - at);
            this.remaining -= take;
            at += take;
            if (this.remaining > 0) break;
            this.stage = Stage.ChunkSize;
          } else {
            break;
          }
          if (this.stage === Stage.Done) {
            this.complete();
            return; // one request out at a time: nothing follows an answer
          }
        }
        if (at < buf.length) buf = buf.subarray(at);
        else return;
        this.pending = Buffer.from(buf);
      }

      readHead(buf: Buffer, start: number, end: number): void {
        // "HTTP/1.1 200 OK"
        this.status = (buf[start + 9]! - 48) * 100 + (buf[start + 10]! - 48) * 10 + (buf[start + 11]! - 48);
        this.remaining = 0;
        this.chunked = false;
        this.close = false;
        this.retryAfterMs = Number.NaN;
        let line = buf.indexOf(CRLF, start) + 2;
        while (line < end) {
          const eol = buf.indexOf(CRLF, line);
          const stop = eol === -1 || eol > end ? end : eol;
          const colon = buf.indexOf(58, line); // ':'
          if (colon !== -1 && colon < stop) {
            const name = buf.toString("latin1", line, colon).toLowerCase();
            if (name === "content-length") this.remaining = numberAt(buf, colon + 1, stop);
            else if (name === "transfer-encoding")
              this.chunked = buf.toString("latin1", colon + 1, stop).includes("chunked");
            else if (name === "connection")
              this.close = buf
                .toString("latin1", colon + 1, stop)
                .toLowerCase()
                .includes("close");
            else if (name === "retry-after" && Number.isNaN(this.retryAfterMs))
              this.retryAfterMs = numberAt(buf, colon + 1, stop) * 1000;
            else if (name === "retry-after-ms") this.retryAfterMs = numberAt(buf, colon + 1, stop);
          }
          line = stop + 2;
        }
      }

      complete(): void {
        const now = performance.now();
        const status = this.status;
        if (measuring && now >= from && now < to) {
          statuses[status] = (statuses[status] ?? 0) + 1;
          const ms = now - this.sentAt;
          if (status === 200) {
            this.side.ok.push(ms);
            allOk.push(ms);
          } else if (status === 429 || status === 503) this.side.refused.push(ms);
          else this.side.other++;
        }
        if (this.close) {
          reconnects++;
          const s = this.socket;
          this.socket = null;
          s?.destroy();
        }
        const refused = status === 429 || status === 503;
        if (this.isPolite && refused) {
          const wait = Number.isFinite(this.retryAfterMs) ? this.retryAfterMs : spec.politeDefaultMs;
          setTimeout(() => this.send(), wait);
        } else {
          this.send();
        }
      }
    }

    for (let i = 0; i < total; i++) conns.push(new Conn(i, i >= spec.connections));
    setTimeout(() => {
      measuring = true;
      process.send?.({ type: "window", phase: "start" });
    }, spec.warmupMs);
    setTimeout(() => {
      measuring = false;
      process.send?.({ type: "window", phase: "end" });
    }, spec.warmupMs + spec.durationMs);
    const cut = setTimeout(
      () => {
        for (const c of conns) c.finish();
      },
      spec.warmupMs + spec.durationMs + GRACE_MS,
    );
    conns.forEach((c, i) => {
      const delay = spec.staggerMs > 0 ? (i * spec.staggerMs) / total : 0;
      setTimeout(() => c.connectAndSend(), delay);
    });
  });
}
