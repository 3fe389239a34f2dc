/**
 * What a fleet simulation runs: the scenario types, the standard fleet (seed 000's measured pods)
 * and the scenarios bench/fleet-sim.ts prints and test/pods/fleet-sim.test.ts runs.
 */
import type { LaneOptions } from "../src/core/options.js";

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

/** How calls arrive. */
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
  /** Lane options merged over runScenario's (limit 256, queue 10 000, timeout 600 s, floor 4). */
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
