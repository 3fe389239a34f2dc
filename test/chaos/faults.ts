/**
 * The fault catalogue: each entry injects one fault into the running fleet and lifts it again,
 * with its parameters drawn from the run's generator, and returns what it did and when. The
 * bound each fault is held to is in `bounds.ts`; this file only breaks things.
 */
import { writeFile } from "node:fs/promises";
import type { TcpProxy } from "../store/tcp-proxy.js";
import { type Ledger, now } from "./ledger.js";
import type { Rng } from "./random.js";
import type { ChaosRedis } from "./redis.js";
import type { Replica } from "./replicas.js";
import type { FleetShape } from "./shape.js";

export const FAULT_KINDS = [
  "replica-kill",
  "pause-short",
  "pause-long",
  "redis-restart",
  "redis-stop",
  "redis-flushall",
  "redis-sleep",
  "redis-maxmemory",
  "proxy-drop",
  "proxy-blackhole",
  "sighup",
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultRecord {
  readonly kind: FaultKind;
  /** What it hit and how: "replica 1 for 4.2 s". */
  readonly detail: string;
  /** The replica slot it hit, when it hit one. */
  readonly replica?: number;
  /** What that replica had running at the pods when it was hit, per budget ("lane", "pod:p0", "key:k-bound"). */
  readonly held: Readonly<Record<string, number>>;
  readonly startAt: number;
  /** When the fault was lifted (the process resumed or restarted, Redis back, the proxy passing). */
  readonly liftedAt: number;
}

/** What a fault may touch. */
export interface FaultTarget {
  readonly shape: FleetShape;
  readonly redis: ChaosRedis;
  readonly replicas: readonly Replica[];
  /** What runs at the pods now, so a fault can hit the replica where it hurts most. */
  readonly ledger: Ledger;
  /** The proxy between replica i and Redis. */
  readonly proxies: readonly TcpProxy[];
  /** Replica i's config with a harmless setting changed (`variant`), for a reload. */
  configFor(replica: number, variant: number): string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function inject(kind: FaultKind, target: FaultTarget, rng: Rng): Promise<FaultRecord> {
  const startAt = now();
  const lease = target.shape.leaseTtlMs;
  // A replica fault hits the replica with the most calls running at the pods that outlive it
  // (a pause past the lease: calls longer than the lease), where defects show (issue 22 §2, §4).
  const outlives = kind === "pause-long" ? lease : 0;
  const replica = victim(target, rng, outlives);
  const held = heldBy(target.ledger, replica.index);
  const done = (detail: string, hit?: number, liftedAt = now()): FaultRecord => ({
    kind,
    detail,
    ...(hit === undefined ? {} : { replica: hit }),
    held: hit === undefined ? {} : held,
    startAt,
    liftedAt,
  });
  switch (kind) {
    case "replica-kill": {
      // The fault is the kill itself; its bound runs from it (the lease ends within lease_ttl_s
      // of it). The restart is a new replica joining, which owes nothing.
      const downMs = rng.between(300, 2000);
      await replica.kill();
      const killedAt = now();
      await sleep(downMs);
      await replica.start();
      return done(`replica ${replica.index} SIGKILL, restarted after ${s(downMs)}`, replica.index, killedAt);
    }
    case "pause-short":
    case "pause-long": {
      const ms = kind === "pause-short" ? rng.between(0.2, 0.6) * lease : rng.between(1.3, 2) * lease;
      replica.pause();
      await sleep(ms);
      replica.resume();
      return done(`replica ${replica.index} SIGSTOP for ${s(ms)} (lease ${s(lease)})`, replica.index);
    }
    case "redis-restart":
      await target.redis.kill();
      await target.redis.start();
      return done("Redis SIGKILL and started again at once, empty");
    case "redis-stop": {
      const ms = rng.between(1500, 5000);
      await target.redis.kill();
      await sleep(ms);
      await target.redis.start();
      return done(`Redis down for ${s(ms)}, back empty`);
    }
    case "redis-flushall":
      await target.redis.with((c) => c.flushall());
      return done("FLUSHALL");
    case "redis-sleep": {
      const secs = Math.round(rng.between(1, 7) * 10) / 10;
      await target.redis.with((c) => c.call("DEBUG", "SLEEP", String(secs))).catch(() => {});
      return done(`DEBUG SLEEP ${secs} s`);
    }
    case "redis-maxmemory": {
      const ms = rng.between(1000, 4000);
      await target.redis.with((c) => c.config("SET", "maxmemory", "1"));
      await sleep(ms);
      await target.redis.with((c) => c.config("SET", "maxmemory", "0"));
      return done(`maxmemory 1 B (writes refused, OOM) for ${s(ms)}`);
    }
    case "proxy-drop":
      target.proxies[replica.index]!.drop();
      return done(`replica ${replica.index}'s Redis connections reset`, replica.index);
    case "proxy-blackhole": {
      const ms = rng.between(1000, 7000);
      const proxy = target.proxies[replica.index]!;
      proxy.hold();
      await sleep(ms);
      proxy.drop(); // what a blackhole ends in: the connections time out and are made anew
      return done(
        `replica ${replica.index}'s Redis traffic blackholed for ${s(ms)}, then reset`,
        replica.index,
      );
    }
    case "sighup": {
      await writeFile(replica.configPath, target.configFor(replica.index, rng.int(0, 1)));
      replica.reload();
      return done(`replica ${replica.index} SIGHUP (queue_timeout_s rewritten)`, replica.index);
    }
  }
}

/** The calls `replica` has running at the pods, per budget they take. */
function heldBy(ledger: Ledger, replica: number): Record<string, number> {
  const held: Record<string, number> = {};
  const add = (name: string) => {
    held[name] = (held[name] ?? 0) + 1;
  };
  for (const c of ledger.calls.values()) {
    if (c.replica !== replica || c.podStartAt === undefined || c.podEndAt !== undefined) continue;
    add("lane");
    add(`pod:${c.pod}`);
    add(`key:${c.key}`);
  }
  return held;
}

/** The up replica holding the most calls at the pods with more than `leftMs` to run (ties: random). */
function victim(target: FaultTarget, rng: Rng, leftMs: number): Replica {
  const held = new Map<number, number>();
  const t = now();
  for (const c of target.ledger.calls.values())
    if (c.podStartAt !== undefined && c.podEndAt === undefined && c.podStartAt + c.serviceMs - t > leftMs)
      held.set(c.replica, (held.get(c.replica) ?? 0) + 1);
  const up = rng.shuffle(target.replicas.filter((r) => r.state === "up"));
  if (up.length === 0) return target.replicas[0]!;
  return up.reduce((best, r) => ((held.get(r.index) ?? 0) > (held.get(best.index) ?? 0) ? r : best));
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
