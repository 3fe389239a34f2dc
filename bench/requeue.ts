/**
 * The cost of putting a waiter that arrived long ago back in line — a re-dispatch waiting again,
 * or a grant the fleet refused — into a 10,000-deep queue (issue 13):
 *
 *   node --import tsx bench/requeue.ts
 *
 * It goes near the front (by arrival) and is taken out again; 20,000 times. Prints µs per pair.
 */
import { WaitQueue } from "../src/core/wait-queue.js";

interface Waiter {
  rank: 0 | 1 | 2;
  arrivedAt: number;
  enqueuedAt: number;
  queued: number;
}

const DEPTH = 10_000;
const ROUNDS = 20_000;
const q = new WaitQueue<Waiter>();
for (let i = 0; i < DEPTH; i++) q.push({ rank: 1, arrivedAt: 100 + i, enqueuedAt: 100 + i, queued: 0 });
let now = 100 + DEPTH;
const t0 = performance.now();
for (let k = 0; k < ROUNDS; k++) {
  const back: Waiter = { rank: 1, arrivedAt: 50 + (k % 40), enqueuedAt: ++now, queued: 0 };
  q.push(back);
  q.remove(back);
}
const us = ((performance.now() - t0) / ROUNDS) * 1000;
console.log(
  `${us.toFixed(1)} µs per re-queue near the front and removal, ${DEPTH.toLocaleString("en")} queued`,
);
