/**
 * (e) sluice's grant latency with a deep queue: the time from a `release()` call to the granted
 * waiter's continuation running (the code after its `await gov.acquire(...)`).
 *
 * Steady state: limit 64, all 64 slots held, `queued` waiters behind them (classes round-robin).
 * Each step releases one held lease; the waiter it grants records the hand-off time, keeps the
 * lease, and a fresh waiter joins the tail first, so the queue stays at `queued`. Measured with
 * `process.hrtime.bigint()`; the first `warm` hand-offs are not recorded.
 */
import { Governor, type Lease, type Priority } from "../src/index.js";
import { flush } from "./turns.js";

const now = process.hrtime.bigint;
const PRIORITIES: readonly Priority[] = ["interactive", "default", "bulk"];

/** `n` keys with no practical bound, weights 1–5 round-robin (`weights` false: no weight given). */
export function keyOptions(
  n: number,
  weights: boolean,
): Record<string, { maxInflight: number; weight?: number }> {
  const keys: Record<string, { maxInflight: number; weight?: number }> = {};
  for (let i = 0; i < n; i++)
    keys[`k${i}`] = { maxInflight: 1_000_000, ...(weights ? { weight: 1 + (i % 5) } : {}) };
  return keys;
}

export interface LatencyResult {
  samples: number;
  queued: number;
  p50Us: number;
  p99Us: number;
  maxUs: number;
}

export async function grantLatency(
  queued = 10_000,
  samples = 10_000,
  warm = 2_000,
  /** Waiters spread round-robin over this many keys, weights 1–5 (issue 24: fair queuing); 0 = no key. */
  keys = 0,
  /** Pass each key's weight (off for a tree without `keys[].weight`). */
  weights = true,
): Promise<LatencyResult> {
  const limit = 64;
  const gov = new Governor({
    lanes: { l: { limit, queueLimit: 200_000, queueTimeoutMs: 3_600_000, reserve: 0 } },
    ...(keys > 0 ? { keys: keyOptions(keys, weights) } : {}),
  });
  const keyOf = (i: number): string | undefined => (keys > 0 ? `k${i % keys}` : undefined);
  const held: Lease[] = [];
  const lat = new Float64Array(samples);
  let recorded = 0;
  let recording = false;
  let releasedAt = 0n;
  let granted: (() => void) | null = null;
  let joined = 0;

  const waiter = async (priority: Priority, key: string | undefined) => {
    const lease = await gov.acquire("l", key === undefined ? { priority } : { priority, key });
    const t = now();
    if (recording) lat[recorded++] = Number(t - releasedAt);
    held.push(lease);
    const wake = granted;
    granted = null;
    wake?.();
  };

  for (let i = 0; i < limit + queued; i++) void waiter(PRIORITIES[joined % 3]!, keyOf(joined++));
  await flush();
  const depth = gov.snapshot().lanes[0]!.queued;
  if (held.length !== limit || depth !== queued)
    throw new Error(`setup: ${held.length} held, ${depth} queued`);

  for (let step = 0; step < warm + samples; step++) {
    recording = step >= warm;
    void waiter(PRIORITIES[joined % 3]!, keyOf(joined++));
    const lease = held.shift()!;
    const next = new Promise<void>((resolve) => {
      granted = resolve;
    });
    releasedAt = now();
    lease.release();
    await next;
  }
  const endDepth = gov.snapshot().lanes[0]!.queued;
  if (recorded !== samples || endDepth !== queued)
    throw new Error(`run: ${recorded} samples, ${endDepth} queued`);
  gov.close();

  lat.sort();
  const q = (p: number) => lat[Math.min(samples - 1, Math.ceil(p * samples) - 1)]! / 1000;
  return { samples, queued, p50Us: q(0.5), p99Us: q(0.99), maxUs: lat[samples - 1]! / 1000 };
}
