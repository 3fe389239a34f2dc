/**
 * Commands per grant, counted with Redis `MONITOR` (not `INFO commandstats`: the Redis at
 * 127.0.0.1:6379 is shared with other processes, and commandstats counts theirs too, while a
 * MONITOR line names the keys and so can be told apart by the contender's unique marker).
 *
 * A separate short run from the timed ones (MONITOR slows Redis down): `grants` grant + release
 * pairs by one caller, each finished before the next starts. Two counts per grant:
 *
 * - commands sent by the client (MONITOR lines from a client address): with one caller that waits
 *   for each, the round trips per grant + release when the release is awaited; a release sent
 *   without waiting overlaps the next grant (ioredis auto-pipelining can put both in one write);
 * - commands run inside Lua scripts (lines from `lua`): the work Redis does per grant.
 *
 * A client line counts when it holds the contender's marker (its keys do; a heartbeat's too, a
 * SUBSCRIBE or PING not), a script's line when its EVALSHA counted. MONITOR is read on a plain
 * socket (its lines are `+<time> [<db> <source>] "<command>" "<arg>" …`): ioredis's monitor mode
 * lost its place in the reply stream on a Redis busy with other processes' scripts.
 */
import { connect, type Socket } from "node:net";
import type { Contender } from "./fleet-redis-contenders.js";
import { client } from "./fleet-redis-contenders.js";

export interface CommandCount {
  /** Commands the client sent, per grant + release. */
  clientPerGrant: number;
  /** Of those, the ones sent before the caller held its slot (the grant's own round trips). */
  beforeGrantPerGrant: number;
  /** Commands Redis ran inside scripts, per grant + release. */
  scriptedPerGrant: number;
  /** The client commands seen, by name (e.g. `evalsha: 2.00`), per grant + release. */
  byName: Record<string, number>;
}

/** One MONITOR line: where it came from (`lua` for a script's own command), its command, the raw text. */
type MonitorListener = (source: string, command: string, line: string) => void;

/** A MONITOR connection on a plain socket, with a listener per line. */
class Monitor {
  readonly #socket: Socket;
  #buffer = "";

  private constructor(
    socket: Socket,
    readonly listener: MonitorListener,
  ) {
    this.#socket = socket;
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => this.#read(chunk));
  }

  /** Connects to `url` (host and port; a password in the URL is sent with AUTH) and starts MONITOR. */
  static async open(url: string, listener: MonitorListener): Promise<Monitor> {
    const u = new URL(url);
    const socket = connect(Number(u.port || 6379), u.hostname);
    socket.on("error", () => {});
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    const m = new Monitor(socket, listener);
    const started = new Promise<void>((resolve) => {
      m.#started = resolve;
    });
    if (u.password !== "") socket.write(`AUTH ${decodeURIComponent(u.password)}\r\n`);
    socket.write("MONITOR\r\n");
    await started;
    return m;
  }

  #started: (() => void) | null = null;

  #read(chunk: string): void {
    this.#buffer += chunk;
    let end = this.#buffer.indexOf("\r\n");
    while (end !== -1) {
      const line = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 2);
      end = this.#buffer.indexOf("\r\n");
      if (line === "+OK") {
        this.#started?.();
        this.#started = null;
        continue;
      }
      const open = line.indexOf("[");
      const close = line.indexOf("]", open);
      if (!line.startsWith("+") || open === -1 || close === -1) continue;
      const source = line.slice(open + 1, close).split(" ")[1] ?? "";
      const command = /^ "([^"]*)"/.exec(line.slice(close + 1))?.[1]?.toLowerCase() ?? "";
      this.listener(source, command, line);
    }
  }

  close(): void {
    this.#socket.destroy();
  }
}

/** Runs `grants` sequential grant + release pairs of `c` while MONITOR counts its commands. */
export async function countCommands(
  url: string,
  marker: string,
  c: Contender,
  grants: number,
): Promise<CommandCount> {
  const admin = client(url);
  const fence = new Fence(admin, `${marker}:fence`);
  let counting = false;
  let beforeGrant = false;
  let sent = 0;
  let sentBeforeGrant = 0;
  let scripted = 0;
  const byName: Record<string, number> = {};
  // A script's own commands follow its EVALSHA line at once (a script runs alone), so a `lua`
  // line belongs to the last client line: counted when that one was the contender's.
  let ours = false;
  const monitor = await Monitor.open(url, (source, command, line) => {
    if (source === "lua") {
      if (counting && ours) scripted++;
      return;
    }
    ours = false;
    if (fence.seen(command, line)) return;
    if (!counting || !line.includes(marker)) return;
    ours = true;
    sent++;
    if (beforeGrant) sentBeforeGrant++;
    byName[command] = (byName[command] ?? 0) + 1;
  });
  try {
    // A few pairs first so one-time work (script loads, first registration) is not counted.
    for (let i = 0; i < 20; i++) await settle((await c.acquire())());
    await fence.pass();
    counting = true;
    for (let i = 0; i < grants; i++) {
      beforeGrant = true;
      const release = await c.acquire();
      // A MONITOR line arrives after its command ran: wait for this grant's lines before the flag moves.
      await fence.pass();
      beforeGrant = false;
      await settle(release());
      // A release sent without waiting goes out on a later tick: let it reach Redis before the
      // fence, so it is not taken for the next grant's.
      await new Promise((resolve) => setTimeout(resolve, 1));
      await fence.pass();
    }
    counting = false;
  } finally {
    monitor.close();
    await admin.quit();
  }
  const per = (n: number) => n / grants;
  return {
    clientPerGrant: per(sent),
    beforeGrantPerGrant: per(sentBeforeGrant),
    scriptedPerGrant: per(scripted),
    byName: Object.fromEntries(Object.entries(byName).map(([k, v]) => [k, per(v)])),
  };
}

async function settle(r: unknown): Promise<void> {
  if (r instanceof Promise) await r.catch(() => {});
}

/**
 * `ECHO token`, awaited until MONITOR has shown it: every command Redis ran before it has been
 * shown too (MONITOR shows commands in the order Redis runs them). A release sent without
 * waiting may still be on its way on another connection; the next fence catches it. The fences'
 * own lines are not counted.
 */
class Fence {
  #n = 0;
  #waiting: { token: string; resolve: () => void } | null = null;

  constructor(
    readonly admin: ReturnType<typeof client>,
    readonly prefix: string,
  ) {}

  /** True for a fence's own line (and wakes whoever waits for it). */
  seen(command: string, line: string): boolean {
    if (command !== "echo" || !line.includes(this.prefix)) return false;
    if (this.#waiting !== null && line.includes(`"${this.#waiting.token}"`)) {
      this.#waiting.resolve();
      this.#waiting = null;
    }
    return true;
  }

  async pass(): Promise<void> {
    const token = `${this.prefix}:${this.#n++}`;
    const shown = new Promise<void>((resolve) => {
      this.#waiting = { token, resolve };
    });
    await this.admin.echo(token);
    let timer: NodeJS.Timeout | undefined;
    const lost = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`MONITOR did not show ${token} within 10 s`)), 10_000);
    });
    try {
      await Promise.race([shown, lost]);
    } finally {
      clearTimeout(timer);
    }
  }
}
