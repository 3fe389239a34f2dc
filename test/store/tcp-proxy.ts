/**
 * A TCP proxy on loopback in front of a test's redis-server, to make the network fail while Redis
 * itself keeps its data (and so a replica's lease): `cut()` drops every connection and refuses new
 * ones until `restore()`, `drop()` only drops them; `hold()` stops forwarding in both directions (what is sent meanwhile is
 * lost), and `dropReplies()` forwards requests but loses the answers — so a script is lost, or run
 * without its caller ever hearing of it, before the next `cut()`. `holdReplies()` keeps the answers
 * on command connections (not the subscribed ones) until `passReplies()`: a script's answer then
 * arrives after messages Redis published later. `loseRequest(pattern)` loses the next request that
 * matches, so its caller waits for an answer that never comes.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

type Mode = "pass" | "hold" | "drop-replies" | "hold-replies";

export class TcpProxy {
  readonly #sockets = new Set<Socket>();
  #server: Server | null = null;
  #mode: Mode = "pass";
  /** Answers kept by `holdReplies()`, in order, with the connection each is for. */
  #held: Array<[Socket, Buffer]> = [];
  #onHeld: (() => void) | null = null;
  #lose: { pattern: RegExp; lost: () => void } | null = null;

  constructor(
    readonly port: number,
    readonly target: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Listens (again) and forwards everything. */
  async restore(): Promise<void> {
    this.#mode = "pass";
    if (this.#server !== null) return;
    const server = createServer((client) => this.#pipe(client));
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
  }

  /** Stops forwarding: requests and answers from now on are lost (connections stay open). */
  hold(): void {
    this.#mode = "hold";
  }

  /** Forwards requests to Redis but loses its answers. */
  dropReplies(): void {
    this.#mode = "drop-replies";
  }

  /** Keeps the answers on command connections until `passReplies()`; resolves when one is kept. */
  holdReplies(): Promise<void> {
    this.#mode = "hold-replies";
    return new Promise((resolve) => {
      this.#onHeld = resolve;
    });
  }

  /** Loses the next request matching `pattern` (its bytes, read as latin1); resolves when it is lost. */
  loseRequest(pattern: RegExp): Promise<void> {
    return new Promise((lost) => {
      this.#lose = { pattern, lost };
    });
  }

  /** Delivers the kept answers, in order, and forwards everything again. */
  passReplies(): void {
    this.#mode = "pass";
    for (const [client, chunk] of this.#held.splice(0)) client.write(chunk);
  }

  /** Every connection closed at once; new ones are forwarded again (a blip: ioredis reconnects at once). */
  drop(): void {
    this.#mode = "pass";
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
  }

  /** Every connection closed at once, new ones refused, until `restore()`. */
  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    if (server !== null) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  #pipe(client: Socket): void {
    const upstream = connect(this.target, "127.0.0.1");
    for (const s of [client, upstream]) {
      this.#sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => {
        this.#sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    let subscribed = false; // the subscriber's connection: its messages pass under `hold-replies`
    client.on("data", (chunk: Buffer) => {
      if (this.#mode === "hold") return;
      const text = chunk.toString("latin1");
      if (!subscribed && /subscribe/i.test(text)) subscribed = true;
      const lose = this.#lose;
      if (lose?.pattern.test(text)) {
        this.#lose = null;
        lose.lost();
        return;
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (this.#mode === "pass" || (this.#mode === "hold-replies" && subscribed)) client.write(chunk);
      else if (this.#mode === "hold-replies") {
        this.#held.push([client, chunk]);
        this.#onHeld?.();
      }
    });
  }
}
