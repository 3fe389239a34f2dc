/**
 * Each peer's benchmark bodies, written out per peer (no shared adapter on the hot path, so no
 * call site turns polymorphic across peers and taxes whoever runs later). Every body times
 * itself with `process.hrtime.bigint()` and returns nanoseconds, excluding construction.
 *
 * The task in (b)/(c) is the same everywhere: take a slot, `await null` (one microtask), give
 * the slot back, count down. Pool-style peers (p-limit, p-queue, bottleneck, cockatiel) run it
 * as their task function; semaphore-style peers (sluice, async-sema, floor) wrap it in
 * acquire/release.
 */
import { Sema } from "async-sema";
import Bottleneck from "bottleneck";
import { bulkhead } from "cockatiel";
import pLimit from "p-limit";
import PQueue from "p-queue";
import { Governor, type Priority } from "../src/index.js";
import { FloorPrioritySemaphore, FloorSemaphore } from "./floor.js";

const now = process.hrtime.bigint;

export interface Peer {
  name: string;
  /** (a) `n` sequential acquire → release (pool-style: `await run(emptyFn)`); returns ns. */
  uncontended(n: number): Promise<bigint>;
  /** (b) `n` tasks submitted at once against `limit`; returns ns until the last one finished. */
  burst(n: number, limit: number): Promise<bigint>;
  /** (c) the same, priorities round-robin interactive / default / bulk; absent = no priorities. */
  burstRanked?: (n: number, limit: number) => Promise<bigint>;
  /** (b)/(c) task cap for peers too slow to run the full count (result is ops/s, so it scales). */
  burstCap?: number;
  /**
   * (d) Builds a limit-1 instance with its one slot held. `enqueue` queues `n` waiters (their
   * promises go into `out`), `queued` counts what the peer reports as queued (some queue
   * asynchronously), `drain` lets everyone through.
   */
  waiters(n: number): Promise<{
    enqueue(out: unknown[]): void;
    queued(): number;
    drain(out: unknown[]): Promise<void>;
  }>;
}

const PRIORITIES: readonly Priority[] = ["interactive", "default", "bulk"];

function sluiceGovernor(limit: number): Governor {
  return new Governor({
    lanes: { l: { limit, queueLimit: 200_000, queueTimeoutMs: 3_600_000, reserve: 0 } },
  });
}

/** A promise resolved by the last of `n` count-downs. */
function countdown(n: number): { all: Promise<void>; tick: () => void } {
  let left = n;
  let done!: () => void;
  const all = new Promise<void>((resolve) => {
    done = resolve;
  });
  return {
    all,
    tick: () => {
      if (--left === 0) done();
    },
  };
}

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const empty = (): undefined => undefined;
const RESOLVED: Promise<void> = Promise.resolve();
/** bottleneck's `schedule` wants a promise back: a shared resolved one (no allocation). */
const emptyAsync = (): Promise<void> => RESOLVED;

const sluice: Peer = {
  name: "sluice",
  async uncontended(n) {
    const gov = sluiceGovernor(64);
    const t0 = now();
    for (let i = 0; i < n; i++) {
      const lease = await gov.acquire("l");
      lease.release();
    }
    const ns = now() - t0;
    gov.close();
    return ns;
  },
  async burst(n, limit) {
    const gov = sluiceGovernor(limit);
    const { all, tick } = countdown(n);
    const task = async () => {
      const lease = await gov.acquire("l");
      await null;
      lease.release();
      tick();
    };
    const t0 = now();
    for (let i = 0; i < n; i++) void task();
    await all;
    const ns = now() - t0;
    gov.close();
    return ns;
  },
  async burstRanked(n, limit) {
    const gov = sluiceGovernor(limit);
    const { all, tick } = countdown(n);
    const task = async (priority: Priority) => {
      const lease = await gov.acquire("l", { priority });
      await null;
      lease.release();
      tick();
    };
    const t0 = now();
    for (let i = 0; i < n; i++) void task(PRIORITIES[i % 3]!);
    await all;
    const ns = now() - t0;
    gov.close();
    return ns;
  },
  async waiters(n) {
    const gov = sluiceGovernor(1);
    const holder = await gov.acquire("l");
    return {
      enqueue(out) {
        for (let i = 0; i < n; i++) out[i] = gov.acquire("l");
      },
      queued: () => gov.snapshot().lanes[0]?.queued ?? -1,
      async drain(out) {
        holder.release();
        for (let i = 0; i < n; i++) ((await out[i]) as { release(): void }).release();
        gov.close();
      },
    };
  },
};

const pLimitPeer: Peer = {
  name: "p-limit",
  async uncontended(n) {
    const limit = pLimit(64);
    const t0 = now();
    for (let i = 0; i < n; i++) await limit(empty);
    return now() - t0;
  },
  async burst(n, limitN) {
    const limit = pLimit(limitN);
    const { all, tick } = countdown(n);
    const task = async () => {
      await null;
      tick();
    };
    const t0 = now();
    for (let i = 0; i < n; i++) void limit(task);
    await all;
    return now() - t0;
  },
  async waiters(n) {
    const limit = pLimit(1);
    const g = gate();
    const held = limit(() => g.promise);
    await null;
    return {
      enqueue(out) {
        for (let i = 0; i < n; i++) out[i] = limit(empty);
      },
      queued: () => limit.pendingCount,
      async drain(out) {
        g.open();
        await held;
        for (const p of out) await p;
      },
    };
  },
};

const pQueuePeer: Peer = {
  name: "p-queue",
  async uncontended(n) {
    const q = new PQueue({ concurrency: 64 });
    const t0 = now();
    for (let i = 0; i < n; i++) await q.add(empty);
    return now() - t0;
  },
  async burst(n, limit) {
    const q = new PQueue({ concurrency: limit });
    const { all, tick } = countdown(n);
    const task = async () => {
      await null;
      tick();
    };
    const t0 = now();
    for (let i = 0; i < n; i++) void q.add(task);
    await all;
    return now() - t0;
  },
  async burstRanked(n, limit) {
    const q = new PQueue({ concurrency: limit });
    const { all, tick } = countdown(n);
    const task = async () => {
      await null;
      tick();
    };
    const t0 = now();
    // p-queue: a greater number runs first.
    for (let i = 0; i < n; i++) void q.add(task, { priority: 2 - (i % 3) });
    await all;
    return now() - t0;
  },
  async waiters(n) {
    const q = new PQueue({ concurrency: 1 });
    const g = gate();
    const held = q.add(() => g.promise);
    await null;
    return {
      enqueue(out) {
        for (let i = 0; i < n; i++) out[i] = q.add(empty);
      },
      queued: () => q.size,
      async drain(out) {
        g.open();
        await held;
        for (const p of out) await p;
      },
    };
  },
};

const bottleneckPeer: Peer = {
  name: "bottleneck",
  burstCap: 1_000,
  async uncontended(n) {
    const b = new Bottleneck({ maxConcurrent: 64 });
    const t0 = now();
    for (let i = 0; i < n; i++) await b.schedule(emptyAsync);
    return now() - t0;
  },
  async burst(n, limit) {
    const b = new Bottleneck({ maxConcurrent: limit });
    const { all, tick } = countdown(n);
    const task = async () => {
      await null;
      tick();
    };
    const t0 = now();
    for (let i = 0; i < n; i++) void b.schedule(task);
    await all;
    return now() - t0;
  },
  async burstRanked(n, limit) {
    const b = new Bottleneck({ maxConcurrent: limit });
    const { all, tick } = countdown(n);
    const task = async () => {
      await null;
      tick();
    };
    const t0 = now();
    // bottleneck: 0 is the highest of 0..9.
    for (let i = 0; i < n; i++) void b.schedule({ priority: i % 3 }, task);
    await all;
    return now() - t0;
  },
  async waiters(n) {
    const b = new Bottleneck({ maxConcurrent: 1 });
    const g = gate();
    void b.schedule(() => g.promise);
    return {
      enqueue(out) {
        for (let i = 0; i < n; i++) out[i] = b.schedule(emptyAsync);
      },
      // A job is first RECEIVED (held by bottleneck's submit lock), then QUEUED: both are waiting.
      queued: () => {
        const c = b.counts();
        return (c.RECEIVED ?? 0) + (c.QUEUED ?? 0);
      },
      async drain() {
        // bottleneck admits about one job per millisecond: 100k would take minutes, and
        // stop({ dropWaitingJobs }) waits on the same submit lock. The caller exits instead.
        throw new Error("bottleneck: not drained");
      },
    };
  },
};

const cockatielPeer: Peer = {
  name: "cockatiel",
  async uncontended(n) {
    const bh = bulkhead(64, 16);
    const t0 = now();
    for (let i = 0; i < n; i++) await bh.execute(empty);
    return now() - t0;
  },
  async burst(n, limit) {
    const bh = bulkhead(limit, n);
    const { all, tick } = countdown(n);
    const task = async () => {
      await null;
      tick();
    };
    const t0 = now();
    for (let i = 0; i < n; i++) void bh.execute(task);
    await all;
    return now() - t0;
  },
  async waiters(n) {
    const bh = bulkhead(1, n);
    const g = gate();
    const held = bh.execute(() => g.promise);
    await null;
    return {
      enqueue(out) {
        for (let i = 0; i < n; i++) out[i] = bh.execute(empty);
      },
      queued: () => n - bh.queueSlots,
      async drain(out) {
        g.open();
        await held;
        for (const p of out) await p;
      },
    };
  },
};

const asyncSemaPeer: Peer = {
  name: "async-sema",
  async uncontended(n) {
    const s = new Sema(64);
    const t0 = now();
    for (let i = 0; i < n; i++) {
      await s.acquire();
      s.release();
    }
    return now() - t0;
  },
  async burst(n, limit) {
    const s = new Sema(limit);
    const { all, tick } = countdown(n);
    const task = async () => {
      await s.acquire();
      await null;
      s.release();
      tick();
    };
    const t0 = now();
    for (let i = 0; i < n; i++) void task();
    await all;
    return now() - t0;
  },
  async waiters(n) {
    const s = new Sema(1);
    await s.acquire();
    return {
      enqueue(out) {
        for (let i = 0; i < n; i++) out[i] = s.acquire();
      },
      queued: () => s.nrWaiting(),
      async drain(out) {
        s.release();
        for (let i = 0; i < n; i++) {
          await out[i];
          s.release();
        }
      },
    };
  },
};

const floorPeer: Peer = {
  name: "floor",
  async uncontended(n) {
    const s = new FloorSemaphore(64);
    const t0 = now();
    for (let i = 0; i < n; i++) {
      await s.acquire();
      s.release();
    }
    return now() - t0;
  },
  async burst(n, limit) {
    const s = new FloorSemaphore(limit);
    const { all, tick } = countdown(n);
    const task = async () => {
      await s.acquire();
      await null;
      s.release();
      tick();
    };
    const t0 = now();
    for (let i = 0; i < n; i++) void task();
    await all;
    return now() - t0;
  },
  async burstRanked(n, limit) {
    const s = new FloorPrioritySemaphore(limit);
    const { all, tick } = countdown(n);
    const task = async (rank: 0 | 1 | 2) => {
      await s.acquire(rank);
      await null;
      s.release();
      tick();
    };
    const t0 = now();
    for (let i = 0; i < n; i++) void task((i % 3) as 0 | 1 | 2);
    await all;
    return now() - t0;
  },
  async waiters(n) {
    const s = new FloorSemaphore(1);
    await s.acquire();
    return {
      enqueue(out) {
        for (let i = 0; i < n; i++) out[i] = s.acquire();
      },
      queued: () => n,
      async drain(out) {
        s.release();
        for (let i = 0; i < n; i++) {
          await out[i];
          s.release();
        }
      },
    };
  },
};

/** In table order: sluice, the libraries, then the floor. */
export const PEERS: readonly Peer[] = [
  sluice,
  pLimitPeer,
  pQueuePeer,
  bottleneckPeer,
  cockatielPeer,
  asyncSemaPeer,
  floorPeer,
];

/** What {@link keepResidents} built: referenced here, so it lives as long as the process. */
const residents: unknown[] = [];

/**
 * Builds one idle instance of each peer and keeps it for the life of the process, the way an
 * application keeps its limiter; each measurement still builds and times a fresh instance. The
 * residents only keep each library's object shapes (V8 maps) alive across the `gc()` before a
 * measurement. Without them that full collection found no instance of a peer's classes alive,
 * freed their maps, and V8 threw away every optimized function that checked them
 * (`--trace-deopt`: "marking dependent code … reason: weak objects"), so the measurement began
 * with the library's code unoptimized — a state a process that keeps its limiter is never in.
 * It cost sluice, whose path touches more classes, ~15–20 % of (b) (docs/bench.md, "Issue 13,
 * sixth pass"). `npm run bench -- --no-resident` measures without them.
 */
export function keepResidents(): void {
  if (residents.length > 0) return;
  residents.push(
    sluiceGovernor(64),
    pLimit(64),
    new PQueue({ concurrency: 64 }),
    new Bottleneck({ maxConcurrent: 64 }),
    bulkhead(64, 16),
    new Sema(64),
    new FloorSemaphore(64),
    new FloorPrioritySemaphore(64),
  );
}
