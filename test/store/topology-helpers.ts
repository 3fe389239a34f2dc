/**
 * Private Redis topologies for the fleet store's tests: a three-master Redis Cluster and a
 * master watched by one Sentinel, each on free loopback ports in a temporary directory, killed
 * (SIGKILL) and removed by `stop()`. Without the binaries the tests skip saying so, except under
 * CI=true, where a missing binary is a failure.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { freePort } from "../helpers/index.js";

/** Why these tests cannot run here, or null when `redis-server` and `redis-cli` both exist. */
export function missingBinaries(): string | null {
  const missing = ["redis-server", "redis-cli"].filter((b) => spawnSync(b, ["--version"]).status !== 0);
  if (missing.length === 0) return null;
  const why = `${missing.join(" and ")} not found on the PATH (apt-get install redis-server)`;
  if (process.env.CI === "true") throw new Error(`CI needs ${why}`);
  return why;
}

/** Processes and a scratch directory to remove together. */
class Processes {
  readonly children: ChildProcess[] = [];
  readonly #args: string[][] = [];
  constructor(readonly dir: string) {}

  spawn(args: string[]): ChildProcess {
    const child = spawn("redis-server", args, { stdio: "ignore", cwd: this.dir });
    this.children.push(child);
    this.#args.push(args);
    return child;
  }

  /** Kills process `i` (SIGKILL: an outage, not a shutdown). */
  kill(i: number): Promise<void> {
    const child = this.children[i]!;
    return new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGKILL");
    });
  }

  /** Starts process `i` again with the arguments it had (a cluster node keeps its nodes.conf). */
  restart(i: number): void {
    this.children[i] = spawn("redis-server", this.#args[i]!, { stdio: "ignore", cwd: this.dir });
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once("exit", () => resolve());
            child.kill("SIGKILL");
          }),
      ),
    );
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Polls `port` with `command` until `ok(reply)`; throws naming `what` after ~10 s. */
async function waitFor(port: number, what: string, command: string[], ok: (reply: string) => boolean) {
  const probe = new Redis(port, "127.0.0.1", { protocol: 2, lazyConnect: true, maxRetriesPerRequest: 0 });
  probe.on("error", () => {});
  try {
    for (let i = 0; i < 200; i++) {
      try {
        if (probe.status !== "ready") await probe.connect();
        const reply = String(await probe.call(command[0]!, ...command.slice(1)));
        if (ok(reply)) return;
      } catch {
        probe.disconnect();
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${what} on port ${port} did not come up`);
  } finally {
    probe.disconnect();
  }
}

/** Three cluster-enabled masters joined by `redis-cli --cluster create`, all 16384 slots served. */
export class RedisCluster {
  private constructor(
    readonly ports: number[],
    readonly processes: Processes,
  ) {}

  /** `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`. */
  get url(): string {
    return `redis+cluster://${this.ports.map((p) => `127.0.0.1:${p}`).join(",")}`;
  }

  static async start(): Promise<RedisCluster> {
    const processes = new Processes(await mkdtemp(join(tmpdir(), "sluice-cluster-")));
    const ports: number[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        // The bus port is chosen too: the default (port + 10000) may be taken or past 65535.
        const [port, bus] = [await freePort(), await freePort()];
        ports.push(port);
        processes.spawn([
          "--port",
          String(port),
          "--cluster-port",
          String(bus),
          "--bind",
          "127.0.0.1",
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          `nodes-${port}.conf`,
          "--save",
          "",
          "--appendonly",
          "no",
          "--dir",
          processes.dir,
        ]);
      }
      for (const port of ports) await waitFor(port, "redis-server", ["PING"], (r) => r === "PONG");
      const create = spawnSync(
        "redis-cli",
        [
          "--cluster",
          "create",
          ...ports.map((p) => `127.0.0.1:${p}`),
          "--cluster-replicas",
          "0",
          "--cluster-yes",
        ],
        { encoding: "utf8", timeout: 30_000 },
      );
      if (create.status !== 0)
        throw new Error(`redis-cli --cluster create failed:\n${create.stdout}${create.stderr}`);
      for (const port of ports)
        await waitFor(port, "cluster_state:ok", ["CLUSTER", "INFO"], (r) => r.includes("cluster_state:ok"));
      return new RedisCluster(ports, processes);
    } catch (error) {
      await processes.stop();
      throw error;
    }
  }

  /** Kills the node on `port` (SIGKILL; no persistence, so it comes back empty). */
  kill(port: number): Promise<void> {
    return this.processes.kill(this.ports.indexOf(port));
  }

  /** Starts the node on `port` again and waits until the cluster serves every slot. */
  async restart(port: number): Promise<void> {
    this.processes.restart(this.ports.indexOf(port));
    for (const p of this.ports)
      await waitFor(p, "cluster_state:ok", ["CLUSTER", "INFO"], (r) => r.includes("cluster_state:ok"));
  }

  stop(): Promise<void> {
    return this.processes.stop();
  }
}

/**
 * A master, a replica of it, and one Sentinel watching them under the name `sluice-master`
 * (quorum 1, a master is judged down after 300 ms), so `killMaster()` leads to a failover.
 */
export class RedisSentinel {
  private constructor(
    readonly masterPort: number,
    readonly replicaPort: number,
    readonly sentinelPort: number,
    readonly processes: Processes,
  ) {}

  readonly master = "sluice-master";

  /** `redis+sentinel://127.0.0.1:S/sluice-master`. */
  get url(): string {
    return `redis+sentinel://127.0.0.1:${this.sentinelPort}/${this.master}`;
  }

  static async start(): Promise<RedisSentinel> {
    const processes = new Processes(await mkdtemp(join(tmpdir(), "sluice-sentinel-")));
    try {
      const [masterPort, replicaPort, sentinelPort] = [await freePort(), await freePort(), await freePort()];
      const server = (port: number, ...more: string[]) =>
        processes.spawn([
          "--port",
          String(port),
          "--bind",
          "127.0.0.1",
          "--save",
          "",
          "--appendonly",
          "no",
          ...more,
        ]);
      // Diskless sync at once (the default waits 5 s for more replicas to join).
      server(masterPort, "--repl-diskless-sync-delay", "0");
      server(replicaPort, "--replicaof", "127.0.0.1", String(masterPort));
      await waitFor(masterPort, "redis-server", ["PING"], (r) => r === "PONG");
      // In sync before the Sentinel starts, so its first look at the master lists the replica
      // (it looks again only every 10 s).
      await waitFor(replicaPort, "the replica in sync", ["INFO", "replication"], (r) =>
        r.includes("master_link_status:up"),
      );
      // A Sentinel rewrites its config file, so it gets its own in the scratch directory.
      const conf = join(processes.dir, "sentinel.conf");
      await writeFile(
        conf,
        [
          `port ${sentinelPort}`,
          "bind 127.0.0.1",
          `dir ${processes.dir}`,
          `sentinel monitor sluice-master 127.0.0.1 ${masterPort} 1`,
          "sentinel down-after-milliseconds sluice-master 300",
          "sentinel failover-timeout sluice-master 2000",
          "",
        ].join("\n"),
      );
      processes.spawn([conf, "--sentinel"]);
      await waitFor(
        sentinelPort,
        "the sentinel to know the replica",
        ["SENTINEL", "REPLICAS", "sluice-master"],
        (r) => r.includes(String(replicaPort)),
      );
      return new RedisSentinel(masterPort, replicaPort, sentinelPort, processes);
    } catch (error) {
      await processes.stop();
      throw error;
    }
  }

  /** Kills the master (SIGKILL) and waits until the Sentinel names the replica as master. */
  async killMaster(): Promise<void> {
    const master = this.processes.children[0]!;
    await new Promise<void>((resolve) => {
      master.once("exit", () => resolve());
      master.kill("SIGKILL");
    });
    await waitFor(
      this.sentinelPort,
      "the failover",
      ["SENTINEL", "GET-MASTER-ADDR-BY-NAME", this.master],
      (r) => r.includes(String(this.replicaPort)),
    );
  }

  stop(): Promise<void> {
    return this.processes.stop();
  }
}
