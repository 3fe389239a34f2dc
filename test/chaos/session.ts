/**
 * One chaos run, start to finish: a private redis-server, a TCP proxy per replica in front of
 * it, counting pods, N `sluice serve` replicas, random traffic, and faults from the catalogue one
 * after another (the next only once the last one's window has closed, so every moment over a
 * limit has one fault to answer for it). Then the traffic stops, and what Redis and each replica
 * still count is read. Returns the raw record; `verdict.ts` judges it.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../store/redis-helpers.js";
import { TcpProxy } from "../store/tcp-proxy.js";
import { faultBounds } from "./bounds.js";
import { FAULT_KINDS, type FaultKind, type FaultRecord, type FaultTarget, inject } from "./faults.js";
import { Ledger, now } from "./ledger.js";
import { CountingPod } from "./pods.js";
import { Rng } from "./random.js";
import { ChaosRedis, leftovers, type RedisLeftovers } from "./redis.js";
import { type ReplicaLeftovers, replicaLeftovers } from "./replica-leftovers.js";
import { Replica } from "./replicas.js";
import { defaultShape, type FleetShape, heartbeatMs, replicaYaml } from "./shape.js";
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
  const bounds = faultBounds(shape);
  const ledger = new Ledger();
  const dir = await mkdtemp(join(tmpdir(), "sluice-chaos-"));
  const redis = new ChaosRedis(await freePort());
  const proxies: TcpProxy[] = [];
  const pods: CountingPod[] = [];
  const replicas: Replica[] = [];
  const rss: Array<Array<[number, number]>> = [];
  let sampler: NodeJS.Timeout | undefined;
  try {
    await redis.start();
    const lane = ledger.gauge("lane", shape.laneLimit);
    const keyGauges = new Map(
      shape.keys.flatMap((k) =>
        k.maxInflight === undefined ? [] : [[k.id, ledger.gauge(`key:${k.id}`, k.maxInflight)] as const],
      ),
    );
    for (let i = 0; i < shape.pods; i++) {
      const pod = new CountingPod(
        `p${i}`,
        ledger,
        [lane, ledger.gauge(`pod:p${i}`, shape.podLimit)],
        keyGauges,
      );
      await pod.listen();
      pods.push(pod);
    }
    const prefix = `sluice-chaos:${options.seed}:${randomUUID().slice(0, 8)}`;
    const configFor = (i: number, variant: number) =>
      replicaYaml(
        shape,
        proxies[i]!.url,
        prefix,
        pods.map((p) => p.url),
        variant,
      );
    for (let i = 0; i < shape.replicas; i++) {
      const proxy = new TcpProxy(await freePort(), redis.port);
      await proxy.restore();
      proxies.push(proxy);
      const file = join(dir, `replica-${i}.yaml`);
      await writeFile(file, configFor(i, 0));
      replicas.push(new Replica(i, await freePort(), file));
      rss.push([]);
    }
    await Promise.all(replicas.map((r) => r.start()));
    options.log(
      `seed ${options.seed}: ${shape.replicas} replicas up, Redis on ${redis.port}, prefix ${prefix}`,
    );
    sampler = setInterval(() => {
      for (const r of replicas) {
        const bytes = r.rssBytes();
        if (bytes !== undefined) rss[r.index]!.push([now(), bytes]);
      }
    }, options.rssEveryMs);

    const traffic = new Traffic(shape, replicas, ledger, rng.fork(1), options.traffic);
    const faultRng = rng.fork(2);
    const target: FaultTarget = { shape, redis, replicas, proxies, ledger, configFor };
    const faults: FaultRecord[] = [];
    const trafficFrom = now();
    traffic.start();
    await sleep(faultRng.between(...options.gapMs) + 1000); // the fleet under load before the first fault
    const deadline = trafficFrom + (options.durationMs ?? 0);
    const queue: FaultKind[] = options.schedule === "each-once" ? faultRng.shuffle(FAULT_KINDS) : [];
    for (;;) {
      const kind =
        options.schedule === "each-once"
          ? queue.shift()
          : now() < deadline
            ? faultRng.pick(FAULT_KINDS)
            : undefined;
      if (kind === undefined) break;
      const record = await inject(kind, target, faultRng);
      faults.push(record);
      options.log(`${((record.startAt - trafficFrom) / 1000).toFixed(1)} s  ${kind}: ${record.detail}`);
      // The next fault only once this one's window has closed: one cause for every moment.
      await sleep(record.liftedAt + bounds[kind].afterMs - now() + faultRng.between(...options.gapMs));
    }
    await traffic.stop();
    const trafficTo = now();
    options.log(
      `traffic stopped after ${((trafficTo - trafficFrom) / 1000).toFixed(1)} s, ${ledger.calls.size} calls`,
    );

    // What is still counted, read until it is all zero or two leases have passed.
    const settleBy = now() + 2 * shape.leaseTtlMs + heartbeatMs(shape);
    let redisLeft: RedisLeftovers;
    let replicasLeft: ReplicaLeftovers[];
    do {
      await sleep(heartbeatMs(shape) / 2);
      redisLeft = await leftovers(redis, prefix);
      replicasLeft = await Promise.all(replicas.map((r) => replicaLeftovers(r)));
    } while (
      now() < settleBy &&
      (Object.keys(redisLeft.counted).length > 0 ||
        redisLeft.waiting.length > 0 ||
        replicasLeft.some((r) => r.counted.length > 0))
    );
    return {
      seed: options.seed,
      shape,
      ledger,
      faults,
      trafficFrom,
      trafficTo,
      rss,
      redisLeft,
      replicasLeft,
      settledMs: now() - trafficTo,
      logs: replicas.map((r) => r.log),
      crashes: replicas.flatMap((r) => r.crashes),
    };
  } finally {
    if (sampler !== undefined) clearInterval(sampler);
    for (const r of replicas) r.resume(); // a stopped process cannot die of SIGKILL until continued
    await Promise.all(replicas.map((r) => r.kill()));
    for (const p of proxies) await p.cut();
    await redis.kill();
    await Promise.all(pods.map((p) => p.close()));
    await rm(dir, { recursive: true, force: true });
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
