/**
 * The fleet a chaos run breaks, built and torn down in one place: a private redis-server, a TCP
 * proxy per replica in front of it, the counting pods (with the ledger's gauges: the lane, each
 * pod, each bounded key), and the `sluice serve` replicas with their config files, all sharing a
 * key prefix of their own. `close()` ends every process and server it started.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../helpers/index.js";
import { TcpProxy } from "../store/tcp-proxy.js";
import type { Ledger } from "./ledger.js";
import { CountingPod } from "./pods.js";
import { ChaosRedis } from "./redis.js";
import { Replica } from "./replicas.js";
import { type FleetShape, replicaYaml } from "./shape.js";

export class ChaosFleet {
  readonly proxies: TcpProxy[] = [];
  readonly pods: CountingPod[] = [];
  readonly replicas: Replica[] = [];
  readonly prefix: string;
  #dir = "";

  private constructor(
    readonly shape: FleetShape,
    readonly redis: ChaosRedis,
    seed: number,
  ) {
    this.prefix = `sluice-chaos:${seed}:${randomUUID().slice(0, 8)}`;
  }

  /** Everything started and listening; on a failure, what was started is closed again. */
  static async start(shape: FleetShape, ledger: Ledger, seed: number): Promise<ChaosFleet> {
    const fleet = new ChaosFleet(shape, new ChaosRedis(await freePort()), seed);
    try {
      await fleet.#start(ledger);
      return fleet;
    } catch (error) {
      await fleet.close();
      throw error;
    }
  }

  /** Replica `i`'s config, `variant` changing a harmless setting (for a reload). */
  configFor(i: number, variant: number): string {
    const podUrls = this.pods.map((p) => p.url);
    return replicaYaml(this.shape, this.proxies[i]!.url, this.prefix, podUrls, variant);
  }

  async #start(ledger: Ledger): Promise<void> {
    const { shape } = this;
    this.#dir = await mkdtemp(join(tmpdir(), "sluice-chaos-"));
    await this.redis.start();
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
      this.pods.push(pod);
    }
    for (let i = 0; i < shape.replicas; i++) {
      const proxy = new TcpProxy(await freePort(), this.redis.port);
      await proxy.restore();
      this.proxies.push(proxy);
      const file = join(this.#dir, `replica-${i}.yaml`);
      await writeFile(file, this.configFor(i, 0));
      this.replicas.push(new Replica(i, await freePort(), file));
    }
    await Promise.all(this.replicas.map((r) => r.start()));
  }

  async close(): Promise<void> {
    await Promise.all(this.replicas.map((r) => r.kill())); // SIGKILL ends a stopped process too
    for (const p of this.proxies) await p.cut();
    await this.redis.kill();
    await Promise.all(this.pods.map((p) => p.close()));
    if (this.#dir !== "") await rm(this.#dir, { recursive: true, force: true });
  }
}
