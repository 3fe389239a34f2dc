/**
 * A deterministic discrete-event simulation of a pod fleet behind one Governor lane (DESIGN §1.3,
 * §1.4). No real timers: a `ManualClock` is moved to the next event, and after every event the
 * microtask queue is drained (one `setImmediate` turn) so the Governor's promises settle at the
 * simulated instant they were resolved. Randomness comes from a seeded PRNG, so a run is a pure
 * function of its scenario.
 *
 * The pods' true capacities are hidden from the Governor: each pod serves at most `capacity`
 * calls at once and refuses any call past that at once (connection refused), or, with `backlog`,
 * holds up to `backlog` more in a listen backlog (seed 000's production pods: 58 in flight at the
 * refusal, 29–32 served) and refuses past that.
 */
import type { Clock } from "../src/core/clock.js";
import { ManualClock } from "../src/core/clock.js";
import type { Lease } from "../src/core/lease.js";
import type { LaneOptions } from "../src/core/options.js";
import { Governor } from "../src/governor.js";

// ---------------------------------------------------------------------------------------------
// Randomness

/** mulberry32: a small, fast, seeded PRNG with values in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Exponential variate with the given mean. */
export function exponential(random: () => number, mean: number): number {
  return -Math.log(1 - random()) * mean;
}

/** Lognormal variate with the given mean and shape σ (σ = 0 gives the mean exactly). */
export function lognormal(random: () => number, mean: number, sigma: number): number {
  if (sigma === 0) return mean;
  const u1 = 1 - random();
  const u2 = random();
  const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  return mean * Math.exp(sigma * z - (sigma * sigma) / 2);
}

// ---------------------------------------------------------------------------------------------
// Time

/** A ManualClock that also tells when its next timer is due, so the sim can stop there. */
export class SimClock extends ManualClock {
  readonly #due = new Set<{ at: number }>();

  override setTimer(atMs: number, fn: () => void): () => void {
    const rec = { at: atMs };
    this.#due.add(rec);
    const cancel = super.setTimer(atMs, () => {
      this.#due.delete(rec);
      fn();
    });
    return () => {
      this.#due.delete(rec);
      cancel();
    };
  }

  /** When the earliest pending timer is due; Infinity when none. */
  nextTimerAt(): number {
    let at = Number.POSITIVE_INFINITY;
    for (const r of this.#due) if (r.at < at) at = r.at;
    return at;
  }
}

/** Resolves after every microtask queued so far (and those they queue) has run. */
export const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

interface SimEvent {
  at: number;
  seq: number;
  run: () => void;
}

/** Binary min-heap of events by (time, insertion order). */
class EventHeap {
  readonly #a: SimEvent[] = [];
  #seq = 0;

  get size(): number {
    return this.#a.length;
  }

  peekAt(): number {
    return this.#a.length === 0 ? Number.POSITIVE_INFINITY : this.#a[0]!.at;
  }

  push(at: number, run: () => void): void {
    const a = this.#a;
    const e: SimEvent = { at, seq: this.#seq++, run };
    a.push(e);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(a[i]!, a[p]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }

  pop(): SimEvent | undefined {
    const a = this.#a;
    if (a.length === 0) return undefined;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && less(a[l]!, a[m]!)) m = l;
        if (r < a.length && less(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}

const less = (x: SimEvent, y: SimEvent): boolean => x.at < y.at || (x.at === y.at && x.seq < y.seq);

// ---------------------------------------------------------------------------------------------
// Scenario

/** One simulated upstream pod. */
export interface PodSpec {
  id: string;
  /** Calls it can serve at once: hidden from the Governor. */
  capacity: number;
  /** The operator's ceiling (`maxInflight`). */
  ceiling: number;
  /** Extra calls it accepts into a listen backlog before refusing. **Default:** 0. */
  backlog?: number;
}

/** A time span in which pods refuse every call. */
export interface Outage {
  fromMs: number;
  toMs: number;
  /** Pods affected. **Default:** every pod. */
  pods?: string[];
}

export type Load =
  /** Open loop: Poisson arrivals at `factor` × the fleet's total true capacity ÷ mean service time. */
  | { kind: "poisson"; factor: number }
  /** Closed loop: `callers` loops, each starting its next call as soon as the last one ends. */
  | { kind: "closed"; callers: number };

export interface Scenario {
  name: string;
  pods: PodSpec[];
  load: Load;
  /** Service time per call: lognormal with this mean and shape. */
  service: { meanMs: number; sigma: number };
  /** What a caller does when its pod refuses: re-dispatch (`lease.retry`) or give up (`lease.failed`). */
  onRefusal: "retry" | "fail";
  /** Lane options merged over the defaults below (limit 256, queue 10 000, timeout 600 s, floor 4). */
  lane?: Partial<LaneOptions>;
  /** Simulated time before measuring (convergence). */
  warmupMs: number;
  /** Measured window after the warm-up. */
  measureMs: number;
  /** Spans in which pods refuse everything (a dead fleet). */
  outages?: Outage[];
  seed: number;
  /** Bucket size for the utilization time series. **Default:** 1 000 ms. */
  bucketMs?: number;
}

/** Per-pod figures over the measured window. */
export interface PodResult {
  id: string;
  capacity: number;
  ceiling: number;
  /** Busy-slot time ÷ (capacity × window). */
  utilization: number;
  dispatches: number;
  refusals: number;
  /** Time-weighted mean of the Governor's width for this pod. */
  meanWidth: number;
  minWidth: number;
  maxWidth: number;
  finalWidth: number;
  /** Width cuts (decreases) in the window. */
  cuts: number;
  trips: number;
  finalBreaker: string;
}

export interface SimResult {
  scenario: string;
  windowMs: number;
  /** Σ busy-slot time ÷ Σ capacity × window. */
  utilization: number;
  dispatches: number;
  refusals: number;
  refusalsPer1000: number;
  /** Client calls that reached a pod at least once (first dispatch in the window). */
  calls: number;
  /** Upstream dispatches ÷ calls. */
  attemptsPerCall: number;
  succeeded: number;
  /** Calls that ended refused (retry denied, or `fail` mode). */
  failed: number;
  /** sluice's own refusals (queue full, expected wait, queue timeout): nothing sent upstream. */
  localRefusals: number;
  /** Successful calls per second. */
  goodputPerS: number;
  /** Σ capacity ÷ mean service time: the most the fleet could complete per second. */
  capacityPerS: number;
  /** Arrival-to-completion latency of successful calls, ms. */
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** Breaker openings in the window / in the whole run. */
  trips: number;
  tripsTotal: number;
  pods: PodResult[];
  /** Utilization per bucket over the whole run (for recovery figures). */
  series: number[];
  bucketMs: number;
  /** Max in flight the fleet saw on any pod relative to its ceiling (must be ≤ 1). */
  maxCeilingUse: number;
}

const LANE = "ocr";

/** Runs one scenario to completion and returns its figures. Deterministic for a given seed. */
export async function runScenario(s: Scenario): Promise<SimResult> {
  const clock = new SimClock(0);
  const random = prng(s.seed);
  const govRandom = prng(s.seed ^ 0x9e3779b9);
  const heap = new EventHeap();
  const endMs = s.warmupMs + s.measureMs;
  const bucketMs = s.bucketMs ?? 1000;
  const inWindow = (t: number) => t >= s.warmupMs && t < endMs;

  const gov = new Governor({
    clock: clock as Clock,
    random: govRandom,
    lanes: {
      [LANE]: {
        limit: 256,
        queueLimit: 10_000,
        queueTimeoutMs: 600_000,
        adaptive: { floor: 4 },
        ...s.lane,
        pods: s.pods.map((p) => ({ id: p.id, maxInflight: p.ceiling })),
      },
    },
  });

  // Upstream pods: what they are really doing, and the accounting the report needs.
  interface UpPod {
    spec: PodSpec;
    serving: number;
    backlogged: Array<() => void>;
    busyMs: number;
    lastT: number;
    dispatches: number;
    refusals: number;
    trips: number;
    cuts: number;
    widthArea: number;
    widthT: number;
    width: number;
    minWidth: number;
    maxWidth: number;
    maxInflightSeen: number;
    buckets: number[];
  }
  const pods = new Map<string, UpPod>();
  for (const spec of s.pods)
    pods.set(spec.id, {
      spec,
      serving: 0,
      backlogged: [],
      busyMs: 0,
      lastT: 0,
      dispatches: 0,
      refusals: 0,
      trips: 0,
      cuts: 0,
      widthArea: 0,
      widthT: s.warmupMs,
      width: spec.ceiling,
      minWidth: spec.ceiling,
      maxWidth: spec.ceiling,
      maxInflightSeen: 0,
      buckets: [],
    });

  /** Integrates busy-slot time (clipped to the window) and the per-bucket series up to `t`. */
  const account = (p: UpPod, t: number) => {
    if (t <= p.lastT) return;
    const busy = Math.min(p.serving, p.spec.capacity);
    if (busy > 0) {
      const a = Math.max(p.lastT, s.warmupMs);
      const b = Math.min(t, endMs);
      if (b > a) p.busyMs += busy * (b - a);
      // Series over the whole run, split at bucket edges.
      let x = p.lastT;
      while (x < t) {
        const k = Math.floor(x / bucketMs);
        const edge = Math.min(t, (k + 1) * bucketMs);
        p.buckets[k] = (p.buckets[k] ?? 0) + busy * (edge - x);
        x = edge;
      }
    }
    p.lastT = t;
  };
  const noteWidth = (p: UpPod, width: number, t: number) => {
    const a = Math.max(p.widthT, s.warmupMs);
    const b = Math.min(t, endMs);
    if (b > a) p.widthArea += p.width * (b - a);
    p.widthT = Math.max(p.widthT, t);
    if (width < p.width && inWindow(t)) p.cuts++;
    p.width = width;
    if (inWindow(t)) {
      if (width < p.minWidth) p.minWidth = width;
      if (width > p.maxWidth) p.maxWidth = width;
    }
  };
  let trips = 0;
  let tripsTotal = 0;
  gov.onWidthChange((e) => noteWidth(pods.get(e.pod)!, e.width, clock.now()));
  gov.onBreakerChange((e) => {
    if (e.to !== "open") return;
    tripsTotal++;
    if (inWindow(clock.now())) {
      trips++;
      pods.get(e.pod)!.trips++;
    }
  });

  const dead = (id: string, t: number): boolean =>
    (s.outages ?? []).some(
      (o) => t >= o.fromMs && t < o.toMs && (o.pods === undefined || o.pods.includes(id)),
    );

  // Counters over the window.
  let dispatches = 0;
  let refusals = 0;
  let calls = 0;
  let succeeded = 0;
  let failed = 0;
  let localRefusals = 0;
  const latencies: number[] = [];

  const sleep = (ms: number): Promise<void> => new Promise((resolve) => heap.push(clock.now() + ms, resolve));

  /**
   * Sends one attempt to pod `id`: "refused" at once, or resolves when served. A backlogged call
   * waits for a serving slot before its service time starts.
   */
  const send = async (id: string): Promise<"refused" | "served"> => {
    const p = pods.get(id)!;
    const now = clock.now();
    account(p, now);
    const window = inWindow(now);
    if (window) {
      dispatches++;
      p.dispatches++;
    }
    const held = p.serving + p.backlogged.length;
    if (held + 1 > p.maxInflightSeen) p.maxInflightSeen = held + 1;
    if (dead(id, now) || held + 1 > p.spec.capacity + (p.spec.backlog ?? 0)) {
      if (window) {
        refusals++;
        p.refusals++;
      }
      return "refused";
    }
    if (p.serving >= p.spec.capacity) await new Promise<void>((resolve) => p.backlogged.push(resolve));
    // A backlogged call takes its slot in `finish` (serving is handed over, not decremented).
    else p.serving++;
    await sleep(lognormal(random, s.service.meanMs, s.service.sigma));
    account(p, clock.now());
    const next = p.backlogged.shift();
    if (next !== undefined) next();
    else p.serving--;
    return "served";
  };

  /** One client call, start to finish. */
  const call = async (): Promise<void> => {
    const arrived = clock.now();
    let lease: Lease;
    try {
      lease = await gov.acquire(LANE);
    } catch {
      if (inWindow(clock.now())) localRefusals++;
      return;
    }
    if (inWindow(clock.now())) calls++;
    for (;;) {
      const result = await send(lease.pod!);
      if (result === "served") {
        lease.succeeded();
        if (inWindow(clock.now())) {
          succeeded++;
          latencies.push(clock.now() - arrived);
        }
        return;
      }
      if (s.onRefusal === "fail") {
        lease.failed({ refused: true });
        if (inWindow(clock.now())) failed++;
        return;
      }
      let again: boolean;
      try {
        again = await lease.retry({ refused: true });
      } catch {
        if (inWindow(clock.now())) localRefusals++;
        return;
      }
      if (!again) {
        if (inWindow(clock.now())) failed++;
        return;
      }
    }
  };

  // Width extremes are over the window: start them from the width in force when it opens.
  heap.push(s.warmupMs, () => {
    for (const p of pods.values()) p.minWidth = p.maxWidth = p.width;
  });

  const capacityPerS = (1000 * s.pods.reduce((a, p) => a + p.capacity, 0)) / s.service.meanMs;
  if (s.load.kind === "poisson") {
    const meanGapMs = 1000 / (s.load.factor * capacityPerS);
    const arrive = () => {
      void call();
      const next = clock.now() + exponential(random, meanGapMs);
      if (next < endMs) heap.push(next, arrive);
    };
    heap.push(exponential(random, meanGapMs), arrive);
  } else {
    const loop = async () => {
      while (clock.now() < endMs) await call();
    };
    for (let i = 0; i < s.load.callers; i++) heap.push(0, () => void loop());
  }

  // The event loop: move the clock to the next sim event or Governor timer, run it, settle.
  for (;;) {
    const at = Math.min(heap.peekAt(), clock.nextTimerAt());
    if (!(at < endMs)) break;
    clock.set(Math.max(at, clock.now()));
    if (heap.peekAt() <= clock.now()) heap.pop()!.run();
    await flush();
  }
  clock.set(endMs);
  await flush();
  const snap = gov.snapshot();
  gov.close();

  const windowMs = s.measureMs;
  let busy = 0;
  let cap = 0;
  let maxCeilingUse = 0;
  const bucketCount = Math.ceil(endMs / bucketMs);
  const series = new Array<number>(bucketCount).fill(0);
  const totalCap = s.pods.reduce((a, p) => a + p.capacity, 0);
  const podResults: PodResult[] = [];
  for (const p of pods.values()) {
    account(p, endMs);
    noteWidth(p, p.width, endMs);
    busy += p.busyMs;
    cap += p.spec.capacity * windowMs;
    maxCeilingUse = Math.max(maxCeilingUse, p.maxInflightSeen / p.spec.ceiling);
    for (let k = 0; k < bucketCount; k++) series[k]! += (p.buckets[k] ?? 0) / (totalCap * bucketMs);
    const ps = snap.pods.find((x) => x.id === p.spec.id)!;
    podResults.push({
      id: p.spec.id,
      capacity: p.spec.capacity,
      ceiling: p.spec.ceiling,
      utilization: p.busyMs / (p.spec.capacity * windowMs),
      dispatches: p.dispatches,
      refusals: p.refusals,
      meanWidth: p.widthArea / windowMs,
      minWidth: p.minWidth,
      maxWidth: p.maxWidth,
      finalWidth: ps.width,
      cuts: p.cuts,
      trips: p.trips,
      finalBreaker: ps.breaker,
    });
  }
  latencies.sort((a, b) => a - b);
  const q = (f: number) => (latencies.length === 0 ? 0 : latencies[Math.floor(f * (latencies.length - 1))]!);
  return {
    scenario: s.name,
    windowMs,
    utilization: busy / cap,
    dispatches,
    refusals,
    refusalsPer1000: dispatches === 0 ? 0 : (1000 * refusals) / dispatches,
    calls,
    attemptsPerCall: calls === 0 ? 0 : dispatches / calls,
    succeeded,
    failed,
    localRefusals,
    goodputPerS: (1000 * succeeded) / windowMs,
    capacityPerS,
    latencyP50Ms: q(0.5),
    latencyP99Ms: q(0.99),
    trips,
    tripsTotal,
    pods: podResults,
    series,
    bucketMs,
    maxCeilingUse,
  };
}

// ---------------------------------------------------------------------------------------------
// The standard fleet and scenarios (seed 000's measured pods)

/** Four pods serving 29–32 at once (seed 000), each configured with ceiling 64. */
export function seed000Fleet(backlog = 0): PodSpec[] {
  return [29, 30, 31, 32].map((capacity, i) => ({
    id: `http://10.0.0.${i + 1}:8000`,
    capacity,
    ceiling: 64,
    backlog,
  }));
}

const SERVICE = { meanMs: 1000, sigma: 0.5 };

/** The scenarios `bench/fleet-sim.ts` prints; `measureMs` can be shortened for quick runs. */
export function standardScenarios(seed = 1, measureMs = 600_000): Scenario[] {
  const base = {
    pods: seed000Fleet(),
    service: SERVICE,
    warmupMs: 60_000,
    measureMs,
    seed,
  };
  return [
    {
      ...base,
      name: "steady: Poisson 2x, re-dispatch",
      load: { kind: "poisson", factor: 2 },
      onRefusal: "retry",
    },
    {
      ...base,
      name: "steady: Poisson 2x, fail on refusal",
      load: { kind: "poisson", factor: 2 },
      onRefusal: "fail",
    },
    {
      ...base,
      name: "steady: closed loop 256, re-dispatch",
      load: { kind: "closed", callers: 256 },
      onRefusal: "retry",
    },
    {
      ...base,
      name: "pods with a listen backlog (refuse > 2x)",
      pods: seed000Fleet(32),
      load: { kind: "poisson", factor: 2 },
      onRefusal: "retry",
    },
    {
      ...base,
      name: "adaptive: false (fixed at 64)",
      lane: { adaptive: false },
      load: { kind: "poisson", factor: 2 },
      onRefusal: "retry",
    },
  ];
}

/** Every pod refuses everything from 60 s to 90 s; the window is the outage. */
export function deadFleetScenario(seed = 1): Scenario {
  return {
    name: "dead fleet 30 s (Poisson 2x, re-dispatch)",
    pods: seed000Fleet(),
    service: SERVICE,
    load: { kind: "poisson", factor: 2 },
    onRefusal: "retry",
    warmupMs: 60_000,
    measureMs: 30_000,
    outages: [{ fromMs: 60_000, toMs: 90_000 }],
    seed,
  };
}

/** The dead fleet followed by its recovery: the window is the minute after the outage. */
export function deadFleetRecoveryScenario(seed = 1): Scenario {
  return {
    ...deadFleetScenario(seed),
    name: "after the dead fleet (90-150 s)",
    warmupMs: 90_000,
    measureMs: 60_000,
  };
}

/** The dead fleet measured over the whole run (0–150 s), so banked re-dispatch budget is included. */
export function deadFleetWholeRunScenario(seed = 1): Scenario {
  return {
    ...deadFleetScenario(seed),
    name: "dead fleet, whole run (0-150 s)",
    warmupMs: 0,
    measureMs: 150_000,
  };
}
