/**
 * The fleet store's scripts, pipelined per turn of the event loop: the scripts asked for in one
 * synchronous run and the promise continuations after it leave in one write, at
 * `process.nextTick` — right after the turn's microtasks, before the loop polls for I/O. A lone
 * script is sent as it is, without a `Pipeline` object.
 *
 * Why not ioredis's `enableAutoPipelining`: it waits for `setImmediate` (the loop's check phase)
 * and builds a `Pipeline` per batch, so at one caller every grant paid an extra pass of the event
 * loop (p50 93–116 µs with plain `EVALSHA`, 165–191 µs auto-pipelined: docs/bench-fleet.md).
 * And why not no pipelining at all: 64 callers would cost 64 socket writes per turn.
 *
 * One connection carries them all, in the order they were asked for (the releases `beforeSend` adds go last): a release sent before a
 * grant reaches Redis before it (`FleetReleases.flushFor`), a heartbeat's re-registration after
 * the releases before it.
 *
 * And why not an ioredis `Pipeline` for the write: each one is a heavy object (a promise, a `Set`,
 * per-instance properties, a closure per command) whose garbage the young generation could not
 * drop — at 5,000 grants/s a pipelined store promoted ~1.2 MB to the old generation per scavenge
 * and each scavenge took 4–10 ms (`--trace-gc-nvp`), which was the grant p99. The commands are
 * sent one by one on a corked socket instead: the same single write, and nothing promoted
 * (docs/bench-fleet.md). A Cluster has no one socket to cork; it keeps the pipeline (one node:
 * every key shares the hash tag).
 */
import type { Redis } from "ioredis";
import type { FleetConnection } from "./connection.js";

/** The commands the fleet store sends (a `ScriptClient`, plus `publish`). */
export type BatchedClient = Pick<Redis, "evalsha" | "eval" | "publish">;

interface Queued {
  readonly command: "evalsha" | "eval";
  readonly args: readonly (string | number)[];
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Send = (...args: (string | number)[]) => Promise<unknown>;

/**
 * `connection` (made without auto-pipelining) as a client whose scripts leave once per turn.
 * `beforeSend` may add the turn's last scripts (the store's batched releases) to the same write.
 */
export function turnPipelined(connection: FleetConnection, beforeSend?: () => void): BatchedClient {
  let queue: Queued[] = [];
  const flush = (): void => {
    beforeSend?.();
    const batch = queue;
    queue = [];
    if (batch.length > 1 && connection.isCluster) {
      sendPipelined(connection, batch);
      return;
    }
    // Writes made while corked leave in one `writev` when uncorked (a lone script needs no cork).
    const socket = batch.length > 1 ? (connection as Redis).stream : undefined;
    socket?.cork();
    try {
      for (const q of batch) (connection[q.command] as Send)(...q.args).then(q.resolve, q.reject);
    } finally {
      socket?.uncork(); // never left corked: every later write would wait behind it
    }
  };
  const send =
    (command: Queued["command"]): Send =>
    (...args) =>
      new Promise((resolve, reject) => {
        if (queue.push({ command, args, resolve, reject }) === 1) process.nextTick(flush);
      });
  return {
    evalsha: send("evalsha"),
    eval: send("eval"),
    // Rare (an account's shared state), and keyless: sent on its own, never in a Cluster pipeline.
    publish: (channel: string, message: string) => connection.publish(channel, message),
  } as unknown as BatchedClient;
}

/** A Cluster's batch as one ioredis pipeline (one node: every key shares the store's hash tag). */
function sendPipelined(connection: FleetConnection, batch: readonly Queued[]): void {
  const pipeline = connection.pipeline();
  for (const q of batch) (pipeline[q.command] as (...a: (string | number)[]) => unknown)(...q.args);
  pipeline.exec().then(
    (results) => {
      batch.forEach((q, i) => {
        const [error, value] = results?.[i] ?? [new Error("no reply in the pipeline's answer"), null];
        if (error === null) q.resolve(value);
        else q.reject(error);
      });
    },
    (error: unknown) => {
      for (const q of batch) q.reject(error);
    },
  );
}
