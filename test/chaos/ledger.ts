/**
 * What the far end saw, by call id: every call the traffic sent (when, to which replica, its
 * class and key, how it ended) and every run of it at a pod (start and end), plus one gauge per
 * budget counted at the pods — the lane (every pod together), each pod, each bounded key — with
 * every change of its value on the harness's clock. The verdict reads only this: the gateways'
 * own numbers are what is under test.
 */
import type { Priority } from "./shape.js";

/** The harness's clock: ms since its start (performance.now() — pods, traffic and faults share it). */
export const now = (): number => performance.now();

export type CallEnd =
  | "ok"
  | "refused" // a status the gateway chose (429, 503 …): see `status`
  | "aborted" // the client went away on purpose
  | "connection" // the replica was not there (killed, restarting)
  | "timeout"; // the client gave up waiting (a paused replica)

export interface CallRecord {
  readonly id: string;
  readonly replica: number;
  readonly priority: Priority;
  readonly key: string;
  readonly stream: boolean;
  readonly serviceMs: number;
  readonly sentAt: number;
  /** When the client had its answer (or gave up). */
  endedAt?: number;
  end?: CallEnd;
  /** HTTP status and sluice's `code`, for a refusal: `503 queue_timeout`. */
  status?: string;
  /** How many times a pod started this call (more than 1 is a call run twice). */
  runs: number;
  pod?: string;
  podStartAt?: number;
  podEndAt?: number;
}

/** One budget counted at the pods: its value over time. */
export class Gauge {
  value = 0;
  peak = 0;
  /** Every change: times and the value from then on, in order. */
  readonly times: number[] = [0];
  readonly values: number[] = [0];

  constructor(
    readonly name: string,
    readonly limit: number,
  ) {}

  move(at: number, delta: number): void {
    this.value += delta;
    if (this.value > this.peak) this.peak = this.value;
    this.times.push(at);
    this.values.push(this.value);
  }

  /** The value at `at` (the last change at or before it). */
  valueAt(at: number): number {
    return this.values[this.#indexAt(at)]!;
  }

  /** The changes inside [from, to], with the value in force at `from` first. */
  *between(from: number, to: number): Generator<[number, number]> {
    let i = this.#indexAt(from);
    yield [from, this.values[i]!];
    for (i++; i < this.times.length && this.times[i]! <= to; i++) yield [this.times[i]!, this.values[i]!];
  }

  /** The index of the last change at or before `at` (binary search: the times are in order). */
  #indexAt(at: number): number {
    let lo = 0;
    let hi = this.times.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.times[mid]! <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

export class Ledger {
  readonly calls = new Map<string, CallRecord>();
  readonly gauges = new Map<string, Gauge>();
  /** Ids a pod started more than once, with the pods that ran them. */
  readonly twice: Array<{ id: string; pods: string[] }> = [];
  /** Runs at a pod of a call the traffic never sent (a header lost on the way). */
  unknownRuns = 0;
  readonly #podsOf = new Map<string, string[]>();

  gauge(name: string, limit: number): Gauge {
    let g = this.gauges.get(name);
    if (g === undefined) {
      g = new Gauge(name, limit);
      this.gauges.set(name, g);
    }
    return g;
  }

  sent(call: Omit<CallRecord, "runs" | "sentAt">): CallRecord {
    const record: CallRecord = { ...call, sentAt: now(), runs: 0 };
    this.calls.set(record.id, record);
    return record;
  }

  ended(record: CallRecord, end: CallEnd, status?: string): void {
    record.endedAt = now();
    record.end = end;
    if (status !== undefined) record.status = status;
  }

  /** A pod started call `id`; `budgets` are the gauges it takes (lane, pod, key). */
  podStarted(id: string, pod: string, budgets: readonly Gauge[]): void {
    const at = now();
    for (const g of budgets) g.move(at, 1);
    const record = this.calls.get(id);
    if (record === undefined) {
      this.unknownRuns++;
      return;
    }
    record.runs++;
    const pods = this.#podsOf.get(id) ?? [];
    pods.push(pod);
    this.#podsOf.set(id, pods);
    if (record.runs === 2) this.twice.push({ id, pods });
    if (record.runs === 1) {
      record.pod = pod;
      record.podStartAt = at;
    }
  }

  podEnded(id: string, budgets: readonly Gauge[]): void {
    const at = now();
    for (const g of budgets) g.move(at, -1);
    const record = this.calls.get(id);
    if (record !== undefined && record.podEndAt === undefined) record.podEndAt = at;
  }
}
