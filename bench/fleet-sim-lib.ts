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
import type { Lease } from "../src/core/lease.js";
import { Governor } from "../src/governor/governor.js";
import { EventHeap, exponential, lognormal, prng, SimClock } from "./fleet-sim-kit.js";
import type { PodSpec, Scenario } from "./fleet-sim-scenarios.js";
import { flush } from "./turns.js";

// ---------------------------------------------------------------------------------------------
// Results

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
  /**
   * The width's range in each bucket of the whole run, warm-up included, as `[min, max]`: how it
   * moved over time (bench/fleet-sim.ts --widths prints it; the test finds when it settled).
   */
  widthSeries: Array<[number, number]>;
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
    /** Width range per bucket, filled up to `widthBucket`. */
    widthSeries: Array<[number, number]>;
    widthBucket: number;
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
      widthSeries: [],
      widthBucket: -1,
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
  const bucketCount = Math.ceil(endMs / bucketMs);
  /** Carries the width in force into every bucket up to the one holding `t`, then adds `width`. */
  const seriesWidth = (p: UpPod, width: number, t: number) => {
    const k = Math.min(Math.floor(t / bucketMs), bucketCount - 1);
    while (p.widthBucket < k) p.widthSeries[++p.widthBucket] = [p.width, p.width];
    const range = p.widthSeries[k]!;
    range[0] = Math.min(range[0], width);
    range[1] = Math.max(range[1], width);
  };
  const noteWidth = (p: UpPod, width: number, t: number) => {
    seriesWidth(p, width, t);
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
      widthSeries: p.widthSeries,
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
// Convergence

/** Factor of a repeat cut: `AimdOptions.decrease`'s default in src/core/aimd.ts. */
export const REPEAT_CUT = 0.8;

/**
 * Where a converged width may be, `[low, high]`. A pod with no backlog refuses the call that would
 * make capacity + 1 in flight, so the width's sawtooth tops out at capacity + 1 (the probe that
 * is refused) and each refusal cuts it to ⌊0.8 × (capacity + 1)⌋: 24–30 for capacity 29, 26–33
 * for 32. A width outside it has not converged (still climbing, or cut twice for one event).
 */
export function convergenceBand(capacity: number): [number, number] {
  return [Math.floor(REPEAT_CUT * (capacity + 1)), capacity + 1];
}

/** The start of the first bucket from which the pod's width stays within its band to the end. */
export function settledAtMs(p: PodResult, bucketMs: number): number {
  const [low, high] = convergenceBand(p.capacity);
  let k = p.widthSeries.length;
  while (k > 0 && p.widthSeries[k - 1]![0] >= low && p.widthSeries[k - 1]![1] <= high) k--;
  return k * bucketMs;
}
