/**
 * One chaos run, start to finish: the fleet (`fleet.ts`) under random traffic, faults from the
 * catalogue one after another (the next only once the last one's window has closed, so every
 * start over a limit has one fault to answer for it), then the traffic stops and what Redis and
 * each replica still count is read. Returns the raw record; `verdict.ts` judges it.
 */
import { faultBounds } from "./bounds.js";
import { FAULT_KINDS, type FaultKind, type FaultRecord, type FaultTarget, inject } from "./faults.js";
import { ChaosFleet } from "./fleet.js";
import { Ledger, now } from "./ledger.js";
import { Rng } from "./random.js";
import { leftovers, type RedisLeftovers } from "./redis.js";
import { type ReplicaLeftovers, replicaLeftovers } from "./replica-leftovers.js";
import { defaultShape, type FleetShape, heartbeatMs } from "./shape.js";
import { Traffic, type TrafficOptions } from "./traffic.js";

export interface ChaosOptions {
  readonly seed: number;
  readonly replicas: number;
  readonly traffic: TrafficOptions;
  /**
   * `each-once`: every kind in the catalogue once, in a random order (the CI test);
   * `random`: kinds drawn with replacement until `durationMs` has passed (the soak).
   */
  readonly schedule: "each-once" | "random";
  /** For `random`: how long to keep injecting. */
  readonly durationMs?: number;
  /** Quiet time between one fault's window closing and the next fault, ms: [lo, hi). */
  readonly gapMs: readonly [number, number];
  /**
   * Traffic with no fault before the first one, ms: outside every fault's window a waiter has no
   * excuse, so this is where a lost wake-up shows.
   */
  readonly steadyMs: number;
  readonly rssEveryMs: number;
  readonly log: (line: string) => void;
}

export interface ChaosRun {
  readonly seed: number;
  readonly shape: FleetShape;
  readonly ledger: Ledger;
  readonly faults: FaultRecord[];
  readonly trafficFrom: number;
  readonly trafficTo: number;
  /** Per replica slot: [harness time, VmRSS bytes]. */
  readonly rss: Array<Array<[number, number]>>;
  readonly redisLeft: RedisLeftovers;
  readonly replicasLeft: ReplicaLeftovers[];
  /** How long after the traffic stopped the counts were last read, ms. */
  readonly settledMs: number;
  /** Each replica's last stderr lines (for a failed run's report). */
  readonly logs: string[];
  /** Replica processes that exited without the harness killing them, with their last output. */
  readonly crashes: string[];
}

export async function runChaos(options: ChaosOptions): Promise<ChaosRun> {
  const rng = new Rng(options.seed);
  const shape = defaultShape(options.replicas);
  const ledger = new Ledger();
  const fleet = await ChaosFleet.start(shape, ledger, options.seed);
  const rss: Array<Array<[number, number]>> = fleet.replicas.map(() => []);
  const sampler = setInterval(() => {
    for (const r of fleet.replicas) {
      const bytes = r.rssBytes();
      if (bytes !== undefined) rss[r.index]!.push([now(), bytes]);
    }
  }, options.rssEveryMs);
  try {
    options.log(
      `seed ${options.seed}: ${shape.replicas} replicas up, Redis on ${fleet.redis.port}, prefix ${fleet.prefix}`,
    );
    const traffic = new Traffic(shape, fleet.replicas, ledger, rng.fork(1), options.traffic);
    const trafficFrom = now();
    traffic.start();
    const faults = await injectFaults(fleet, ledger, rng.fork(2), options, trafficFrom);
    await traffic.stop();
    const trafficTo = now();
    options.log(
      `traffic stopped after ${((trafficTo - trafficFrom) / 1000).toFixed(1)} s, ${ledger.calls.size} calls`,
    );
    const left = await readLeftovers(fleet);
    return {
      seed: options.seed,
      shape,
      ledger,
      faults,
      trafficFrom,
      trafficTo,
      rss,
      ...left,
      settledMs: now() - trafficTo,
      logs: fleet.replicas.map((r) => r.log),
      crashes: fleet.replicas.flatMap((r) => r.crashes),
    };
  } finally {
    clearInterval(sampler);
    await fleet.close();
  }
}

/**
 * Faults one after another while the traffic runs — every kind once (`each-once`) or drawn until
 * the deadline (`random`) — each only once the last one's window has closed: one cause for
 * every start over a limit.
 */
async function injectFaults(
  fleet: ChaosFleet,
  ledger: Ledger,
  rng: Rng,
  options: ChaosOptions,
  trafficFrom: number,
): Promise<FaultRecord[]> {
  const bounds = faultBounds(fleet.shape);
  const target: FaultTarget = {
    shape: fleet.shape,
    redis: fleet.redis,
    replicas: fleet.replicas,
    proxies: fleet.proxies,
    ledger,
    configFor: (i, variant) => fleet.configFor(i, variant),
  };
  const faults: FaultRecord[] = [];
  await sleep(options.steadyMs);
  const deadline = trafficFrom + (options.durationMs ?? 0);
  const queue: FaultKind[] = options.schedule === "each-once" ? rng.shuffle(FAULT_KINDS) : [];
  const next = () =>
    options.schedule === "each-once" ? queue.shift() : now() < deadline ? rng.pick(FAULT_KINDS) : undefined;
  for (let kind = next(); kind !== undefined; kind = next()) {
    const record = await inject(kind, target, rng);
    faults.push(record);
    options.log(`${((record.startAt - trafficFrom) / 1000).toFixed(1)} s  ${kind}: ${record.detail}`);
    await sleep(record.liftedAt + bounds[kind].afterMs - now() + rng.between(...options.gapMs));
  }
  return faults;
}

/** What Redis and each replica still count, read until it is all zero or two leases have passed. */
async function readLeftovers(
  fleet: ChaosFleet,
): Promise<{ redisLeft: RedisLeftovers; replicasLeft: ReplicaLeftovers[] }> {
  const hb = heartbeatMs(fleet.shape);
  const settleBy = now() + 2 * fleet.shape.leaseTtlMs + hb;
  for (;;) {
    await sleep(hb / 2);
    const redisLeft = await leftovers(fleet.redis, fleet.prefix);
    const replicasLeft = await Promise.all(fleet.replicas.map((r) => replicaLeftovers(r)));
    const clean =
      Object.keys(redisLeft.counted).length === 0 &&
      redisLeft.waiting.length === 0 &&
      replicasLeft.every((r) => r.counted.length === 0);
    if (clean || now() >= settleBy) return { redisLeft, replicasLeft };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
