/**
 * A TCP proxy on loopback in front of a test's redis-server, to make the network fail while Redis
 * itself keeps its data (and so a replica's lease): `cut()` drops every connection and refuses new
 * ones until `restore()`, `drop()` only drops them; `hold()` stops forwarding in both directions (what is sent meanwhile is
 * lost), and `dropReplies()` forwards requests but loses the answers — so a script is lost, or run
 * without its caller ever hearing of it, before the next `cut()`.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

type Mode = "pass" | "hold" | "drop-replies";

export class TcpProxy {
  readonly #sockets = new Set<Socket>();
  #server: Server | null = null;
  #mode: Mode = "pass";

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
    client.on("data", (chunk) => {
      if (this.#mode === "pass" || this.#mode === "drop-replies") upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (this.#mode === "pass") client.write(chunk);
    });
  }
}
