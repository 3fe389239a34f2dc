/**
 * The gateway benchmark's non-Node tools: HAProxy (a peer proxy) and wrk (the load generator for
 * the zero-service-time scenario, where a Node client would be the bottleneck). Both are optional:
 * `which` decides, and the caller prints a note and skips what is missing.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { join } from "node:path";

export function which(cmd: string): string | undefined {
  try {
    return execFileSync("sh", ["-c", `command -v ${cmd}`], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** A free loopback port (bound, then released: a small race, fine on a quiet loopback). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Resolves when `port` accepts a connection; rejects after `timeoutMs`. */
export async function waitForPort(port: number, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = connect(port, "127.0.0.1");
      sock.once("connect", () => {
        sock.destroy();
        resolve(true);
      });
      sock.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listening on 127.0.0.1:${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface HaproxyListener {
  name: string;
  pods: string[];
  perPod: number;
  /**
   * When set, a request that finds this many already in the backend's queue is answered 429 at
   * once (`http-request return` on `queue()`), as sluice refuses past its queue_limit. Unset:
   * everything waits up to `timeout queue`.
   */
  queueLimit?: number;
}

export interface Haproxy {
  urls: string[];
  pid: number;
  config: string;
  close(): Promise<void>;
}

/**
 * One HAProxy process, one frontend per listener. Each backend: round-robin, `maxconn` per server
 * = the per-pod limit, so what does not fit waits in the backend's one shared queue for at most
 * `timeout queue` (then 503), or with `queueLimit` is refused 429 once the queue is that long.
 * Threads: HAProxy's default (one per core) unless `threads` says.
 */
export async function startHaproxy(
  bin: string,
  dir: string,
  listeners: HaproxyListener[],
  queueTimeoutMs: number,
  /** `nbthread`; **Default:** HAProxy's (one per core). */
  threads?: number,
): Promise<Haproxy> {
  const ports = await Promise.all(listeners.map(() => freePort()));
  const lines = [
    "global",
    "  maxconn 4096",
    ...(threads === undefined ? [] : [`  nbthread ${threads}`]),
    "defaults",
    "  mode http",
    "  option http-keep-alive",
    "  timeout connect 2s",
    "  timeout client 30s",
    "  timeout server 30s",
    "  timeout http-keep-alive 30s",
    `  timeout queue ${queueTimeoutMs}ms`,
  ];
  listeners.forEach((l, i) => {
    lines.push(
      `frontend fe_${l.name}`,
      `  bind 127.0.0.1:${ports[i]}`,
      `  default_backend be_${l.name}`,
      `backend be_${l.name}`,
      "  balance roundrobin",
      ...(l.queueLimit === undefined
        ? []
        : [
            `  http-request return status 429 content-type application/json string '{"error":{"type":"overloaded","code":"queue_full"}}' if { queue() ge ${l.queueLimit} }`,
          ]),
      ...l.pods.map((url, j) => `  server p${j} ${new URL(url).host} maxconn ${l.perPod}`),
    );
  });
  const config = `${lines.join("\n")}\n`;
  const file = join(dir, "haproxy.cfg");
  writeFileSync(file, config);
  const child: ChildProcess = spawn(bin, ["-db", "-f", file], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (b: Buffer) => {
    stderr += b.toString();
  });
  try {
    await Promise.all(ports.map((p) => waitForPort(p)));
  } catch (error) {
    child.kill("SIGKILL");
    throw new Error(`haproxy did not start: ${stderr || (error as Error).message}`);
  }
  return {
    urls: ports.map((p) => `http://127.0.0.1:${p}`),
    pid: child.pid!,
    config,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

export interface WrkResult {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

/** One wrk run (one thread, `connections` keep-alive connections, POST `body`). */
export function runWrk(
  bin: string,
  dir: string,
  url: string,
  body: string,
  connections: number,
  seconds: number,
): Promise<WrkResult> {
  const script = join(dir, "wrk.lua");
  writeFileSync(
    script,
    [
      'wrk.method = "POST"',
      `wrk.body = ${JSON.stringify(body)}`,
      'wrk.headers["Content-Type"] = "application/json"',
      "done = function(summary, latency, requests)",
      "  local e = summary.errors",
      '  io.write(string.format("WRKJSON %d %d %d %d %d %d\\n", summary.requests, summary.duration,',
      "    latency:percentile(50), latency:percentile(99), e.status,",
      "    e.connect + e.read + e.write + e.timeout))",
      "end",
    ].join("\n"),
  );
  return new Promise((resolve, reject) => {
    const child = spawn(
      bin,
      [
        "-t1",
        `-c${connections}`,
        `-d${Math.max(1, Math.round(seconds))}s`,
        "--timeout",
        "10s",
        "-s",
        script,
        url,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout.on("data", (b: Buffer) => {
      out += b.toString();
    });
    child.stderr.on("data", (b: Buffer) => {
      out += b.toString();
    });
    child.once("error", reject);
    child.once("exit", () => {
      const m = /WRKJSON (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)/.exec(out);
      if (m === null) return reject(new Error(`wrk gave no result:\n${out}`));
      const [requests, durationUs, p50, p99, non2xx, errors] = m.slice(1).map(Number) as number[];
      resolve({
        requests: requests!,
        seconds: durationUs! / 1e6,
        p50Ms: p50! / 1000,
        p99Ms: p99! / 1000,
        non2xx: non2xx!,
        errors: errors!,
      });
    });
  });
}
