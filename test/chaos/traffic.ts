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
import { Agent } from "undici";
import { sendCall } from "./client.js";
import type { Ledger } from "./ledger.js";
import type { Rng } from "./random.js";
import type { Replica } from "./replicas.js";
import { type FleetShape, heartbeatMs, type Priority } from "./shape.js";

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

  /**
   * Flow for 2–6 s, a lull of 0.2–1.5 s (often inside one heartbeat), a burst; until the traffic
   * stops. One lull in four is a hand-off instead (below), while every client holds its calls.
   */
  async #wave(): Promise<void> {
    while (this.#running) {
      await Promise.race([sleep(this.rng.between(2000, 6000)), this.#stopped]);
      if (!this.#running) break;
      let open = () => {};
      this.#lull = new Promise<void>((resolve) => {
        open = resolve;
      });
      if (this.rng.chance(0.25)) await this.#handoff();
      else await Promise.race([sleep(this.rng.between(200, 1500)), this.#stopped]);
      this.#focus = this.rng.chance(0.5) ? this.rng.pick(this.replicas) : undefined;
      this.#longWave = this.rng.chance(0.3);
      this.#lull = null;
      open();
    }
  }

  /**
   * Issue 22 §1's recipe, with nothing else running: replica A takes three long calls and B three
   * short ones; B's end while nobody waits (their releases go unannounced), then six arrive at A.
   * A's mirror may still count B's three: the calls it cannot grant must be granted within a
   * heartbeat of B's ending (the verdict's stuck-waiter check), with no call of A's own ending to
   * wake them for seconds.
   */
  async #handoff(): Promise<void> {
    const lane = this.ledger.gauges.get("lane")!;
    for (let waited = 0; lane.value > 0 && waited < 8000; waited += 50) await sleep(50);
    const up = this.replicas.filter((r) => r.state === "up");
    if (lane.value > 0 || up.length < 2) return;
    const [a, b] = this.rng.shuffle(up) as [Replica, Replica];
    // Interactive, so the whole lane is theirs (the reserve too), as in the lane of 6.
    const key = this.shape.keys.find((k) => k.maxInflight === undefined && k.maxPriority === "interactive")!;
    const send = (replica: Replica, serviceMs: number) =>
      sendCall(this.#agent, this.ledger, {
        id: `h-${++this.#seq}`,
        replica,
        key,
        priority: "interactive",
        serviceMs,
        stream: false,
      });
    // Long enough that no call of A's own ends (and wakes its waiters) within the stuck threshold.
    const longMs = 2 * heartbeatMs(this.shape) + 2500;
    const first = [0, 1, 2].map(() => send(a, longMs));
    await Promise.all([0, 1, 2].map(() => send(b, 300)));
    await Promise.all([...first, ...[0, 1, 2, 3, 4, 5].map(() => send(a, longMs))]);
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
    const end = await sendCall(this.#agent, this.ledger, {
      id: `c${client}-${++this.#seq}`,
      replica,
      key,
      priority,
      serviceMs,
      stream,
      ...(abortAfterMs === undefined ? {} : { abortAfterMs }),
    });
    return end === "connection";
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
