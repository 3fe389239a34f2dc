/**
 * A profile's simulated pods for one run: started fresh (so one run's OOM or peaks never leak
 * into the next), time-scaled, sharing a machine where the profile says so, and read back as
 * what each saw.
 */
import type { AnswerOptions } from "../sim/answer.js";
import { SimMachine } from "../sim/machine.js";
import { type SimServer, startSim } from "../sim/server.js";
import type { PodStats } from "./stats.js";
import type { LoadProfile, PodSpec } from "./types.js";

/** What the pods had done at one moment: to measure a window (utilization, refusals after warm-up). */
export interface PodProbe {
  atMs: number;
  busySlotMs: number[];
  refusals: number[];
}

/** A profile's pods, running. */
export interface RunningPods {
  readonly pods: ReadonlyArray<{ spec: PodSpec; sim: SimServer }>;
  /** Model → its pods' URLs. */
  readonly urls: Readonly<Record<string, string[]>>;
  /** Machine name → the machine its pods share. */
  readonly machines: ReadonlyMap<string, SimMachine>;
  /** What a model's answers depend on (its first pod's options). */
  answers(model: string): AnswerOptions;
  /** Counters now, for a window's start or end. */
  probe(): PodProbe;
  /** Per-pod stats, utilization over [from, to]. */
  stats(from: PodProbe, to: PodProbe): PodStats[];
  close(): Promise<void>;
}

/**
 * Starts every pod of `profile` at `scale` (real ms per seed ms). `basePort` > 0 puts them on
 * consecutive ports from it (for a gateway configured beforehand); 0 picks free ports.
 */
export async function startPods(profile: LoadProfile, scale: number, basePort = 0): Promise<RunningPods> {
  const machines = new Map<string, SimMachine>();
  for (const [name, m] of Object.entries(profile.machines ?? {})) {
    machines.set(name, new SimMachine({ oomAt: m.oomAt, downMs: m.downMs * scale }));
  }
  const started: Array<{ spec: PodSpec; sim: SimServer }> = [];
  try {
    for (const [i, spec] of profile.pods.entries()) {
      const machine = spec.machine === undefined ? undefined : machines.get(spec.machine);
      if (spec.machine !== undefined && machine === undefined) {
        throw new Error(
          `profile ${profile.name}: pod ${i} names machine "${spec.machine}", which it does not define`,
        );
      }
      const sim = await startSim({
        model: spec.model,
        ...spec.options,
        timeScale: scale,
        port: basePort === 0 ? 0 : basePort + i,
        ...(machine ? { machine } : {}),
      });
      started.push({ spec, sim });
    }
  } catch (e) {
    await Promise.all(started.map((p) => p.sim.close()));
    throw e;
  }
  const urls: Record<string, string[]> = {};
  for (const p of started) append(urls, p.spec.model, p.sim.url);
  const t0 = performance.now();
  return {
    pods: started,
    urls,
    machines,
    answers(model) {
      const pod = started.find((p) => p.spec.model === model);
      if (pod === undefined) throw new Error(`profile ${profile.name}: no pod serves model "${model}"`);
      return pod.sim.options;
    },
    probe() {
      return {
        atMs: performance.now() - t0,
        busySlotMs: started.map((p) => p.sim.stats().busySlotMs),
        refusals: started.map((p) => p.sim.stats().refused),
      };
    },
    stats(from, to) {
      const windowMs = Math.max(1, to.atMs - from.atMs);
      return started.map((p, i) => {
        const s = p.sim.stats();
        const busy = to.busySlotMs[i]! - from.busySlotMs[i]!;
        return {
          model: p.spec.model,
          url: p.sim.url,
          max_num_seqs: p.sim.options.maxNumSeqs,
          max_inflight: s.maxInflightSeen,
          max_running: s.maxRunningSeen,
          completed: s.completed,
          refused_connections: s.refusedConnections,
          throttled: s.throttled,
          overloaded: s.overloaded,
          oom_events: s.oomEvents,
          utilization: round4(busy / (p.sim.options.maxNumSeqs * windowMs)),
        };
      });
    },
    async close() {
      await Promise.all(started.map((p) => p.sim.close()));
    },
  };
}

function round4(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

/** The URLs `startPods(profile, scale, basePort)` will give its pods, by model, without starting them. */
export function podUrls(profile: LoadProfile, basePort: number): Record<string, string[]> {
  const urls: Record<string, string[]> = {};
  for (const [i, p] of profile.pods.entries()) append(urls, p.model, `http://127.0.0.1:${basePort + i}`);
  return urls;
}

/** Adds `url` to the list of `model`. */
export function append(urls: Record<string, string[]>, model: string, url: string): void {
  const list = urls[model];
  if (list === undefined) urls[model] = [url];
  else list.push(url);
}
