/**
 * Random traffic at the replicas: `loops` clients, each sending one call at a time to a replica
 * of its choosing, with a class (`X-Sluice-Priority`), a client key, a planned service time
 * (sometimes longer than the lease, so a paused replica's calls outlive it), a stream or not, and
 * sometimes going away before the answer (while queued or while running). Every call has an id
 * the pods count by; the ledger gets how each ended.
 *
 * The load comes in waves: a lull (every client holds its next call, so the calls running end
 * while nobody waits, and their releases go unannounced) and then a burst (every client sends at
 * once, often all to one replica, and in some waves with mostly long calls) — the shape that left
 * waiters stuck with room in the fleet (issue 22 §1), besides the steady contention between them.
 */
import { Agent, request } from "undici";
import type { CallEnd, Ledger } from "./ledger.js";
import type { Rng } from "./random.js";
import type { Replica } from "./replicas.js";
import { type FleetShape, MODEL, type Priority } from "./shape.js";

export interface TrafficOptions {
  /** Clients sending at once. */
  readonly loops: number;
  /** Pause between one client's calls, ms: [lo, hi). */
  readonly thinkMs: readonly [number, number];
  /** Share of calls whose client goes away before the answer. */
  readonly disconnectShare: number;
  /** Share of calls answered as an SSE stream. */
  readonly streamShare: number;
}

/** The longest a client waits for an answer before it gives up (a paused replica never answers). */
const CLIENT_PATIENCE_MS = 30_000;

export class Traffic {
  #running = false;
  #loops: Promise<void>[] = [];
  #seq = 0;
  readonly #agent = new Agent({ connections: 256, keepAliveTimeout: 1000 });
  /** While a lull lasts: resolves when it ends. */
  #lull: Promise<void> | null = null;
  /** The replica the first call of each client after a lull goes to, if the burst is focused. */
  #focus: Replica | undefined;
  #waves: Promise<void> | null = null;
  /** Whether this wave's calls are mostly long (longer than a heartbeat, many past the lease). */
  #longWave = false;
  #stop = () => {};
  /** Resolves when `stop()` is called: the waves end at once. */
  readonly #stopped = new Promise<void>((resolve) => {
    this.#stop = resolve;
  });

  constructor(
    readonly shape: FleetShape,
    readonly replicas: readonly Replica[],
    readonly ledger: Ledger,
    readonly rng: Rng,
    readonly options: TrafficOptions,
  ) {}

  start(): void {
    this.#running = true;
    this.#waves = this.#wave();
    for (let i = 0; i < this.options.loops; i++) this.#loops.push(this.#loop(i));
  }

  /** Stops sending and resolves once every client has its last answer. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#stop();
    await this.#waves;
    await Promise.all(this.#loops);
    this.#loops = [];
    await this.#agent.close();
  }

  /** Flow for 2–6 s, a lull of 0.2–1.5 s (often inside one heartbeat), a burst; until the traffic stops. */
  async #wave(): Promise<void> {
    while (this.#running) {
      await Promise.race([sleep(this.rng.between(2000, 6000)), this.#stopped]);
      if (!this.#running) break;
      let open = () => {};
      this.#lull = new Promise<void>((resolve) => {
        open = resolve;
      });
      await Promise.race([sleep(this.rng.between(200, 1500)), this.#stopped]);
      this.#focus = this.rng.chance(0.5) ? this.rng.pick(this.replicas) : undefined;
      this.#longWave = this.rng.chance(0.3);
      this.#lull = null;
      open();
    }
  }

  async #loop(client: number): Promise<void> {
    while (this.#running) {
      let replica = this.rng.pick(this.replicas);
      if (this.#lull !== null) {
        await this.#lull;
        replica = this.#focus ?? replica;
      }
      const slept = await this.#call(client, replica);
      const [lo, hi] = this.options.thinkMs;
      await sleep(slept ? 250 : this.rng.between(lo, hi));
    }
  }

  /** One call; true when the replica was not there (the client backs off a little). */
  async #call(client: number, replica: Replica): Promise<boolean> {
    const rng = this.rng;
    const key = rng.pick(this.shape.keys);
    const priority: Priority =
      key.maxPriority === "interactive" && rng.chance(0.6)
        ? "interactive"
        : rng.chance(0.6)
          ? "default"
          : "bulk";
    // Mostly short calls; 15 % outlive the lease (a paused replica's calls keep running), 70 % in
    // a long wave (where a waiter left stuck behind them would wait seconds, not a turn).
    const serviceMs = rng.chance(this.#longWave ? 0.7 : 0.15)
      ? Math.round(rng.between(this.shape.leaseTtlMs * 1.2, this.shape.leaseTtlMs * 1.8))
      : Math.round(rng.between(80, 1200));
    const stream = rng.chance(this.options.streamShare);
    const abortAfterMs = rng.chance(this.options.disconnectShare)
      ? rng.between(50, serviceMs + 1000)
      : undefined;
    const id = `c${client}-${++this.#seq}`;
    const record = this.ledger.sent({ id, replica: replica.index, priority, key: key.id, stream, serviceMs });
    const controller = new AbortController();
    const patience = setTimeout(() => controller.abort("patience"), CLIENT_PATIENCE_MS);
    const leave =
      abortAfterMs === undefined ? undefined : setTimeout(() => controller.abort("leave"), abortAfterMs);
    let end: CallEnd = "ok";
    let status: string | undefined;
    try {
      const res = await request(`${replica.url}/v1/chat/completions`, {
        method: "POST",
        dispatcher: this.#agent,
        signal: controller.signal,
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${key.token}`,
          "x-sluice-priority": priority,
          "x-chaos-call": id,
          "x-chaos-ms": String(serviceMs),
          "x-chaos-key": key.id,
          "x-chaos-stream": stream ? "1" : "0",
        },
        body: JSON.stringify({
          model: MODEL,
          stream,
          messages: [{ role: "user", content: `chaos call ${id}` }],
        }),
      });
      const text = await res.body.text();
      if (res.statusCode !== 200) {
        end = "refused";
        status = `${res.statusCode} ${codeOf(text)}`;
      }
    } catch (error) {
      const reason = controller.signal.reason;
      if (reason === "leave") end = "aborted";
      else if (reason === "patience") end = "timeout";
      else {
        end = "connection";
        status = (error as { code?: string }).code ?? (error as Error).message;
      }
    } finally {
      clearTimeout(patience);
      if (leave !== undefined) clearTimeout(leave);
    }
    this.ledger.ended(record, end, status);
    return end === "connection";
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function codeOf(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { code?: string } };
    return parsed.error?.code ?? "?";
  } catch {
    return "?";
  }
}
