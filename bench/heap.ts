/**
 * (d) Heap bytes per queued waiter, one peer per process so earlier peers leave nothing behind:
 *
 *   node --expose-gc --import tsx bench/heap.ts PEER [WAITERS]
 *
 * A limit-1 instance with its slot held; gc(), heapUsed; queue WAITERS (default 100,000) waiters,
 * keeping their promises in a preallocated array; gc(), heapUsed; divide; then let them all
 * through. Prints one JSON line: { peer, waiters, queued, bytesPerWaiter, drainMs }.
 */
import { PEERS } from "./peers.js";
import { flush } from "./turns.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  console.error("run with node --expose-gc");
  process.exit(2);
}
const name = process.argv[2];
const n = Number(process.argv[3] ?? 100_000);
const peer = PEERS.find((p) => p.name === name);
if (peer === undefined) {
  console.error(`unknown peer ${name}; one of ${PEERS.map((p) => p.name).join(", ")}`);
  process.exit(2);
}

function heapUsed(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

const out: unknown[] = new Array(n).fill(null);
const w = await peer.waiters(n);
await flush();
const before = heapUsed();
w.enqueue(out);
// Some peers queue asynchronously (bottleneck): wait until they report every waiter queued.
for (let i = 0; i < 2_000 && w.queued() < n; i++) await flush();
const queued = w.queued();
const after = heapUsed();
const t0 = performance.now();
let drainMs: number | null = null;
try {
  await w.drain(out);
  drainMs = performance.now() - t0;
} catch {
  // bottleneck: too slow to drain (see peers.ts); the numbers above are unaffected.
}
console.log(
  JSON.stringify({ peer: name, waiters: n, queued, bytesPerWaiter: (after - before) / n, drainMs }),
);
process.exit(0);
