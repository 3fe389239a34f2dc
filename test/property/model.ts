/**
 * A model of callers driving one Governor through random interleavings of acquire, abort,
 * release / succeeded / failed, retry and clock advances (STYLE G15: the §1 invariants as
 * property tests, with a ManualClock and no real timers). It only uses the public surface:
 * `acquire`, the lease, `snapshot()`, and the documented `sluice:lease:grant` diagnostics
 * channel, which tells the model which lease was granted when, in grant order.
 *
 * After every step (one operation, then one macrotask so promise callbacks have run) the
 * checks in invariants.ts compare the snapshot with what the model's callers hold.
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import {
  Governor,
  isKeyLimitError,
  isQueueFullError,
  isQueueTimeoutError,
  isQuotaPausedError,
  type Lease,
  type Priority,
  type Snapshot,
} from "../../src/index.js";
import { ManualClock } from "../../src/testing.js";
import { flush } from "../helpers/index.js";

export type Rank = 0 | 1 | 2;
export const PRIORITY: readonly Priority[] = ["interactive", "default", "bulk"];

export type Ending = "release" | "succeeded" | "fail503" | "refused" | "error" | "quota" | "dispose";

export type Op =
  | {
      t: "acquire";
      lane: number;
      pri: Priority;
      key: "k1" | "k2" | undefined;
      abortable: boolean;
      /** `wait: false`: take a free slot now or be refused, never queue. */
      noWait: boolean;
    }
  | { t: "abort"; pick: number }
  | { t: "end"; pick: number; how: Ending; twice: Ending | undefined }
  | { t: "again"; pick: number; how: Ending | "retry" }
  | { t: "advance"; ms: number }
  | { t: "retry"; pick: number; how: "refused" | "503" };

export interface LaneSpec {
  name: string;
  limit: number;
  reserve: number;
  /** Overrides the setup's queue timeout for this lane. */
  queueTimeoutMs?: number;
  pods?: { id: string; maxInflight: number }[];
}

export interface Setup {
  lanes: LaneSpec[];
  groupLimit: number;
  queueLimit: number;
  queueTimeoutMs: number;
  agingMs: number;
  floor: number;
  baseCooldownMs: number;
  maxCooldownMs: number;
}

/** Keys as the brief sets them: k2 may not claim more than `default`. */
export const KEYS = { k1: { maxInflight: 3 }, k2: { maxInflight: 4, maxPriority: "default" } } as const;
const KEY_CAP: Record<string, Rank> = { k1: 0, k2: 1 };

export type Status = "pending" | "held" | "retrying" | "ended" | "refused" | "aborted" | "shed" | "timedout";

/** One caller's acquire, as the model sees it. */
export interface Call {
  id: number;
  lane: string;
  /** Own class after the key's cap. */
  rank: Rank;
  arrivedAt: number;
  key: string | undefined;
  controller: AbortController | undefined;
  abortReason: Error | undefined;
  status: Status;
  lease: Lease | undefined;
  /** Re-dispatched at least once: its place in line follows its first arrival (left out of order checks). */
  retried: boolean;
  retryPending: boolean;
  /** Event counter when it arrived, when it left the queue (grant, abort, shed, refusal). */
  fromEv: number;
  exitEv: number | undefined;
  /** Clock time it timed out (the timeout removes it before the pass at that instant). */
  exitTime: number | undefined;
  settled: boolean;
  refusal: unknown;
  noWait: boolean;
  /** What the lane looked like just before this call arrived (invariants.ts, check 6). */
  arrival: { room: boolean; queueEmpty: boolean; interactiveQueued: boolean; quotaPaused: boolean };
}

/** A grant as published on `sluice:lease:grant`, with the lane's numbers at that instant. */
export interface Grant {
  lease: Lease;
  ev: number;
  time: number;
  laneInflight: number;
  laneLimit: number;
  reserve: number;
  /** Per lane, right after this grant: which own classes it had a slot for (lane, reserve, pod). */
  roomFor: Map<string, { interactive: boolean; other: boolean }>;
}

export class Model {
  readonly clock = new ManualClock();
  readonly gov: Governor;
  readonly calls: Call[] = [];
  readonly byLease = new Map<Lease, Call>();
  readonly violations: string[] = [];
  /** What a run exercised (to keep the generators honest). */
  readonly stats = {
    grants: 0,
    timeouts: 0,
    sheds: 0,
    refusals: 0,
    expectedWait: 0,
    aborts: 0,
    retries: 0,
    retriesRegranted: 0,
    retriesDenied: 0,
    retriesTimedOut: 0,
    widthCuts: 0,
    trips: 0,
  };
  /** Grants published during the current step, in order. */
  grants: Grant[] = [];
  /** The call whose signal this step aborted, and its status just before. */
  aborted: { call: Call; status: Status } | undefined;
  ev = 0;
  opEv = 0;
  /** Pod in-flight counts after the previous step (a cut may leave a pod above its new width). */
  prevPodInflight = new Map<string, number>();

  readonly #published = new Set<Lease>();
  readonly #onGrant = (message: unknown) => this.#grant(message as Lease);

  constructor(readonly setup: Setup) {
    const lanes: Record<string, object> = {};
    for (const l of setup.lanes) {
      lanes[l.name] = {
        limit: l.limit,
        reserve: l.reserve,
        group: "g",
        queueLimit: setup.queueLimit,
        queueTimeoutMs: l.queueTimeoutMs ?? setup.queueTimeoutMs,
        agingMs: setup.agingMs,
        ...(l.pods === undefined
          ? {}
          : {
              pods: l.pods,
              adaptive: { floor: setup.floor },
              breaker: { baseCooldownMs: setup.baseCooldownMs, maxCooldownMs: setup.maxCooldownMs },
            }),
      };
    }
    this.gov = new Governor({
      clock: this.clock,
      // Jitter factor 0.8 + 0.4 × 0.5 = 1: cooldowns are whole ms, so `reopens_in_s === 0` is exact.
      random: () => 0.5,
      groups: { g: { limit: setup.groupLimit } },
      keys: KEYS,
      lanes,
    });
    subscribe("sluice:lease:grant", this.#onGrant);
    this.gov.onWidthChange((e) => {
      if (e.width < e.ceiling) this.stats.widthCuts++;
    });
    this.gov.onBreakerChange((e) => {
      if (e.to === "open") this.stats.trips++;
    });
  }

  dispose(): void {
    unsubscribe("sluice:lease:grant", this.#onGrant);
  }

  snapshot(): Snapshot {
    return this.gov.snapshot();
  }

  laneSpec(name: string): LaneSpec {
    return this.setup.lanes.find((l) => l.name === name)!;
  }

  timeoutOf(lane: string): number {
    return this.laneSpec(lane).queueTimeoutMs ?? this.setup.queueTimeoutMs;
  }

  #grant(lease: Lease): void {
    // The diagnostics channel is process-wide: only this governor's lanes concern this model.
    if (this.setup.lanes.every((l) => l.name !== lease.lane)) return;
    // A lease is published once per grant: again only after a re-dispatch that waited again
    // (test/regress/grant-channel.test.ts).
    if (this.#published.has(lease)) {
      this.violations.push(`a lease of ${lease.lane} was published as granted twice`);
      return;
    }
    this.#published.add(lease);
    this.ev++;
    this.stats.grants++;
    const s = this.gov.snapshot();
    const lane = s.lanes.find((l) => l.lane === lease.lane)!;
    this.grants.push({
      lease,
      ev: this.ev,
      time: this.clock.now(),
      laneInflight: lane.inflight,
      laneLimit: lane.limit,
      reserve: lane.reserve,
      roomFor: new Map(
        s.lanes.map((l) => {
          const pods = s.pods.filter((p) => p.lane === l.lane);
          const pod = pods.length === 0 || pods.some(podFree);
          return [
            l.lane,
            { interactive: pod && l.inflight < l.limit, other: pod && l.inflight < l.limit - l.reserve },
          ];
        }),
      ),
    });
    // Budgets at the very instant of the grant, before anything else can move (check 1 and 5).
    const where = `grant of ${lease.lane}/${lease.priority} at ${this.clock.now()}`;
    if (lane.inflight > lane.limit) this.violations.push(`${where}: lane ${lane.inflight} > ${lane.limit}`);
    for (const g of s.groups)
      if (g.inflight > g.limit) this.violations.push(`${where}: group ${g.inflight} > ${g.limit}`);
    if (lease.priority !== "interactive" && lane.inflight > lane.limit - lane.reserve)
      this.violations.push(
        `${where}: a non-interactive call took the reserve (${lane.inflight}/${lane.limit})`,
      );
    if (lease.pod !== undefined) {
      const pod = s.pods.find((p) => p.id === lease.pod)!;
      if (pod.inflight > pod.width)
        this.violations.push(
          `${where}: pod ${pod.id} granted above its width (${pod.inflight}/${pod.width})`,
        );
    }
  }

  /** Runs one operation, lets promise callbacks run, and notes what settled. */
  async step(op: Op): Promise<void> {
    this.ev++;
    this.opEv = this.ev;
    this.grants = [];
    this.aborted = undefined;
    this.#apply(op);
    await flush();
    for (const g of this.grants) {
      const call = this.byLease.get(g.lease);
      if (call === undefined) {
        this.violations.push(
          `a lease of ${g.lease.lane} was published as granted but its acquire never resolved`,
        );
        continue;
      }
      if (call.exitEv === undefined) call.exitEv = g.ev;
    }
    this.#publishedPruned();
  }

  #publishedPruned(): void {
    // Ended leases are never granted again; forget them so the set stays small.
    for (const lease of this.#published) {
      const call = this.byLease.get(lease);
      if (call !== undefined && call.status !== "held" && call.status !== "retrying")
        this.#published.delete(lease);
    }
  }

  #apply(op: Op): void {
    switch (op.t) {
      case "acquire":
        this.#acquire(op);
        return;
      case "abort": {
        const call = pick(this.abortable(), op.pick);
        if (call === undefined) return;
        this.aborted = { call, status: call.status };
        call.abortReason = new Error(`abort #${call.id}`);
        call.controller!.abort(call.abortReason);
        this.stats.aborts++;
        return;
      }
      case "end": {
        const call = this.pickHeld(op.pick);
        if (call === undefined) return;
        this.end(call, op.how);
        if (op.twice !== undefined) this.again(call, op.twice);
        return;
      }
      case "again": {
        const ended = this.calls.filter((c) => c.status === "ended" && c.lease !== undefined);
        const call = ended[op.pick % Math.max(1, ended.length)];
        if (call !== undefined) this.again(call, op.how);
        return;
      }
      case "advance":
        this.clock.advance(op.ms);
        return;
      case "retry": {
        const held = this.calls.filter(
          (c) => c.status === "held" && this.laneSpec(c.lane).pods !== undefined && !c.retryPending,
        );
        const call = held[op.pick % Math.max(1, held.length)];
        if (call !== undefined) this.#retry(call, op.how);
        return;
      }
    }
  }

  pickHeld(index: number): Call | undefined {
    return pick(
      this.calls.filter((c) => c.status === "held"),
      index,
    );
  }

  /**
   * Calls whose signal may still be aborted: waiting ones (the abort removes them), held ones
   * (the abort must change nothing, but a later re-dispatch that waits again is cancelled at
   * once) and re-dispatches waiting again.
   */
  abortable(): Call[] {
    return this.calls.filter(
      (c) =>
        c.controller !== undefined &&
        !c.controller.signal.aborted &&
        (c.status === "pending" || c.status === "held" || c.status === "retrying"),
    );
  }

  #acquire({ lane: laneIndex, pri, key, abortable, noWait }: Extract<Op, { t: "acquire" }>): void {
    const spec = this.setup.lanes[laneIndex % this.setup.lanes.length]!;
    const own = PRIORITY.indexOf(pri) as Rank;
    const rank = key === undefined ? own : (Math.max(own, KEY_CAP[key]!) as Rank);
    const controller = abortable ? new AbortController() : undefined;
    const call: Call = {
      id: this.calls.length,
      lane: spec.name,
      rank,
      arrivedAt: this.clock.now(),
      key,
      controller,
      abortReason: undefined,
      status: "pending",
      lease: undefined,
      retried: false,
      retryPending: false,
      fromEv: this.opEv,
      exitEv: undefined,
      exitTime: undefined,
      settled: false,
      refusal: undefined,
      noWait,
      arrival: arrival(this.gov.snapshot(), spec.name, rank),
    };
    this.calls.push(call);
    const options = { priority: pri, key, signal: controller?.signal, ...(noWait ? { wait: false } : {}) };
    this.gov.acquire(spec.name, options).then(
      (lease) => {
        call.settled = true;
        call.lease = lease;
        call.status = "held";
        this.byLease.set(lease, call);
      },
      (error: unknown) => {
        call.settled = true;
        this.#rejected(call, error);
      },
    );
  }

  #rejected(call: Call, error: unknown): void {
    if (call.abortReason !== undefined && error === call.abortReason) {
      call.status = "aborted";
      call.exitEv = this.opEv;
    } else if (isQueueTimeoutError(error)) {
      this.stats.timeouts++;
      // The manual clock fires the governor's timer at its due time, so a waiter times out at
      // exactly its lane's queue timeout: later would mean a missed timer.
      if (error.waitedMs !== this.timeoutOf(call.lane))
        this.violations.push(
          `call #${call.id} timed out after ${error.waitedMs} ms, not ${this.timeoutOf(call.lane)}`,
        );
      call.status = "timedout";
      call.exitTime = call.arrivedAt + error.waitedMs;
    } else if (isQueueFullError(error) && error.reason === "shed") {
      // Shedding happens inside the arrival that pushed it out, before that arrival's pass.
      this.stats.sheds++;
      call.status = "shed";
      call.exitEv = this.opEv;
    } else if (isQuotaPausedError(error)) {
      // Refused at once only while every pod of its lane was held by a quota pause (or tripped).
      if (!call.arrival.quotaPaused)
        this.violations.push(
          `call #${call.id} refused quota_paused though its lane's pods were not all paused`,
        );
      this.stats.refusals++;
      call.status = "refused";
      call.refusal = error;
      call.exitEv = call.fromEv;
    } else if (isQueueFullError(error) || isKeyLimitError(error)) {
      this.stats.refusals++;
      if (isQueueFullError(error) && error.reason === "expected_wait") this.stats.expectedWait++;
      call.status = "refused";
      call.refusal = error;
      call.exitEv = call.fromEv;
    } else {
      call.status = "ended";
      this.violations.push(`call #${call.id} rejected with an unexpected error: ${String(error)}`);
    }
  }

  /** Ends a held lease the way `how` says. */
  end(call: Call, how: Ending): void {
    call.status = "ended";
    finish(call.lease!, how);
  }

  /** Calls an ending on a lease that already ended: the counts must not move (check 4). */
  again(call: Call, how: Ending | "retry"): void {
    const before = counts(this.gov.snapshot());
    if (how === "retry") {
      void call.lease!.retry({ refused: true }).then((ok) => {
        if (ok) this.violations.push(`retry() of ended call #${call.id} resolved true`);
      });
    } else finish(call.lease!, how);
    const after = counts(this.gov.snapshot());
    if (JSON.stringify(before) !== JSON.stringify(after))
      this.violations.push(`${how} on ended call #${call.id} changed counts: ${before} -> ${after}`);
  }

  #retry(call: Call, how: "refused" | "503"): void {
    this.stats.retries++;
    this.#published.delete(call.lease!); // a re-queued retry is published again when granted
    call.retried = true;
    call.retryPending = true;
    call.status = "retrying";
    call.lease!.retry(how === "refused" ? { refused: true } : { status: 503 }).then(
      (ok) => {
        call.retryPending = false;
        call.status = ok ? "held" : "ended";
        this.stats[ok ? "retriesRegranted" : "retriesDenied"]++;
      },
      (error: unknown) => {
        call.retryPending = false;
        call.status = "ended";
        if (call.abortReason !== undefined && error === call.abortReason) {
          call.status = "aborted";
          call.exitEv = this.opEv;
        } else if (isQueueTimeoutError(error)) this.stats.retriesTimedOut++;
        else if (isQueueFullError(error) && error.reason === "shed") {
          call.status = "shed";
          call.exitEv = this.opEv;
        } else
          this.violations.push(`retry of #${call.id} rejected with an unexpected error: ${String(error)}`);
      },
    );
  }
}

function pick<T>(items: readonly T[], index: number): T | undefined {
  return items[index % Math.max(1, items.length)];
}

const ENDINGS: Record<Ending, (lease: Lease) => void> = {
  release: (l) => l.release(),
  succeeded: (l) => l.succeeded({ tokens: 10 }),
  fail503: (l) => l.failed({ status: 503 }),
  refused: (l) => l.failed({ refused: true }),
  error: (l) => l.failed(new Error("socket hang up")),
  quota: (l) => l.failed({ status: 429, retryAfterMs: 200 }),
  dispose: (l) => l[Symbol.dispose](),
};

function finish(lease: Lease, how: Ending): void {
  ENDINGS[how](lease);
}

/** The counts a double ending must leave untouched. */
export function counts(s: Snapshot): string {
  return JSON.stringify({
    lanes: s.lanes.map((l) => [l.lane, l.inflight, l.queued, l.queued_by_priority, l.width]),
    pods: s.pods.map((p) => [p.id, p.inflight, p.width, p.breaker, p.trips, p.paused_s]),
    groups: s.groups.map((g) => [g.group, g.inflight]),
    keys: s.keys.map((k) => [k.key, k.inflight, k.queued]),
  });
}

/** A pod that can certainly take a call now (a half-open pod may have its one probe out). */
export function podFree(p: Snapshot["pods"][number]): boolean {
  return (
    p.inflight < p.width &&
    p.paused_s === 0 &&
    (p.breaker === "closed" || (p.breaker === "open" && p.reopens_in_s === 0))
  );
}

/** Whether a call of own class `rank` arriving at `lane` finds a slot (lane and its reserve, group, pod). */
export function arrival(s: Snapshot, lane: string, rank: Rank): Call["arrival"] {
  const l = s.lanes.find((x) => x.lane === lane)!;
  const pods = s.pods.filter((p) => p.lane === lane);
  return {
    room:
      l.inflight < l.limit - (rank === 0 ? 0 : l.reserve) &&
      s.groups.every((g) => g.inflight < g.limit) &&
      (pods.length === 0 || pods.some(podFree)),
    queueEmpty: l.queued === 0,
    interactiveQueued: l.queued_by_priority.interactive > 0,
    quotaPaused: l.paused_s > 0,
  };
}
