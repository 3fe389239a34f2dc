/**
 * A profile's simulated pods for one run: started fresh (so one run's OOM, peaks or spent token
 * bucket never leak into the next), time-scaled, sharing a machine where the profile says so,
 * and read back as what each saw. A pod is a `sluice sim` server or a provider's account
 * (provider-pod.ts); both are read through one `RunningPod`.
 */
import { expectedAnswer } from "../sim/answer.js";
import { SimMachine } from "../sim/machine.js";
import type { WorkKind } from "../sim/openai.js";
import type { Provider } from "../sim/provider.js";
import { type SimServer, type SimStats, startSim } from "../sim/server.js";
import { accountStats, providerExpected, startProviderPod } from "./provider-pod.js";
import type { AccountStats, PodStats, PodTenantStats } from "./stats.js";
import { assertScalable } from "./time-scale.js";
import type { LoadProfile, ProviderPodSpec, SimPodSpec } from "./types.js";

/** The bytes a 2xx answer to `body` on a `kind` route must carry. */
export type ExpectedAnswer = (kind: WorkKind, body: Buffer) => string;

/** What the pods had done at one moment: to measure a window (utilization, refusals after warm-up). */
export interface PodProbe {
  /** The run's clock: real ms since the pods started. */
  atMs: number;
  /** Per pod: slot-ms spent running (a sim), tokens charged (a provider). */
  busy: number[];
  /** Per pod: refusals so far (refused connections, 429s, 503s). */
  refusals: number[];
}

/** One pod, running: a sim or a provider account. */
export type RunningPod =
  | { kind: "sim"; spec: SimPodSpec; url: string; sim: SimServer }
  | { kind: "provider"; spec: ProviderPodSpec; url: string; provider: Provider };

/** A profile's pods, running. */
export interface RunningPods {
  readonly pods: ReadonlyArray<RunningPod>;
  /** Model → its pods' URLs. */
  readonly urls: Readonly<Record<string, string[]>>;
  /** Machine name → the machine its pods share. */
  readonly machines: ReadonlyMap<string, SimMachine>;
  /** The exact answers of a model's pods (its first pod's: every pod of a model answers alike). */
  expected(model: string): ExpectedAnswer;
  /** Counters now, for a window's start or end. */
  probe(): PodProbe;
  /** Per-pod stats, utilization over [from, to]. */
  stats(from: PodProbe, to: PodProbe): PodStats[];
  /**
   * Busy ÷ capacity over [from, to]: slot time of the sims when there are any, else tokens
   * charged ÷ tokens the accounts allow in the window (a profile mixes no kinds).
   */
  utilization(from: PodProbe, to: PodProbe): number;
  /** Each provider account's tokens per minute from `start`, `offerMs` of offering. */
  accounts(start: PodProbe, offerMs: number): AccountStats[];
  close(): Promise<void>;
}

/**
 * Starts every pod of `profile` at `scale` (real ms per seed ms). `basePort` > 0 puts them on
 * consecutive ports from it (for a gateway configured beforehand); 0 picks free ports.
 */
export async function startPods(profile: LoadProfile, scale: number, basePort = 0): Promise<RunningPods> {
  assertScalable(profile, scale);
  const t0 = performance.now();
  const now = () => performance.now() - t0;
  const machines = new Map<string, SimMachine>();
  for (const [name, m] of Object.entries(profile.machines ?? {})) {
    machines.set(name, new SimMachine({ oomAt: m.oomAt, downMs: m.downMs * scale }));
  }
  const started: RunningPod[] = [];
  try {
    for (const [i, spec] of profile.pods.entries()) {
      const port = basePort === 0 ? 0 : basePort + i;
      if (spec.kind === "provider") {
        const provider = await startProviderPod(spec, scale, port, now);
        started.push({ kind: "provider", spec, url: provider.url, provider });
        continue;
      }
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
        port,
        ...(machine ? { machine } : {}),
      });
      started.push({ kind: "sim", spec, url: sim.url, sim });
    }
  } catch (e) {
    await Promise.all(started.map(closePod));
    throw e;
  }
  const urls: Record<string, string[]> = {};
  for (const p of started) append(urls, p.spec.model, p.url);
  // A provider account's minute is a real one (time-scale.ts: a bucket's minute cannot be scaled).
  const minuteMs = 60_000;
  /** Tokens a provider account allows per ms (0 unmetered). */
  const tokensPerMs = (p: RunningPod) =>
    p.kind === "provider" && p.spec.account.tpm !== undefined ? p.spec.account.tpm / minuteMs : 0;
  return {
    pods: started,
    urls,
    machines,
    expected(model) {
      const pod = started.find((p) => p.spec.model === model);
      if (pod === undefined) throw new Error(`profile ${profile.name}: no pod serves model "${model}"`);
      if (pod.kind === "provider") return providerExpected(pod.spec);
      const options = pod.sim.options;
      return (kind, body) => expectedAnswer(kind, body, options);
    },
    probe() {
      return {
        atMs: now(),
        busy: started.map((p) =>
          p.kind === "sim" ? p.sim.stats().busySlotMs : p.provider.stats().tokensServed,
        ),
        refusals: started.map((p) => {
          if (p.kind === "sim") return p.sim.stats().refused;
          const t = p.provider.stats().throttled;
          return t.tokens + t.requests + t.inflight;
        }),
      };
    },
    stats(from, to) {
      const windowMs = Math.max(1, to.atMs - from.atMs);
      return started.map((p, i) => {
        const busy = to.busy[i]! - from.busy[i]!;
        return p.kind === "sim"
          ? simStats(p.spec, p.sim, busy / (p.sim.options.maxNumSeqs * windowMs))
          : providerStats(p.spec, p.provider, tokensPerMs(p) === 0 ? 0 : busy / (tokensPerMs(p) * windowMs));
      });
    },
    utilization(from, to) {
      const windowMs = Math.max(1, to.atMs - from.atMs);
      const sims = started.some((p) => p.kind === "sim");
      let busy = 0;
      let capacity = 0;
      started.forEach((p, i) => {
        if ((p.kind === "sim") !== sims) return;
        busy += to.busy[i]! - from.busy[i]!;
        capacity += (p.kind === "sim" ? p.sim.options.maxNumSeqs : tokensPerMs(p)) * windowMs;
      });
      return capacity === 0 ? 0 : round4(busy / capacity);
    },
    accounts(start, offerMs) {
      return started.flatMap((p) =>
        p.kind === "provider"
          ? [accountStats(p.spec, p.provider, { startMs: start.atMs, minuteMs, offerMs })]
          : [],
      );
    },
    async close() {
      await Promise.all(started.map(closePod));
    },
  };
}

function closePod(p: RunningPod): Promise<void> {
  return p.kind === "sim" ? p.sim.close() : p.provider.close();
}

function simStats(spec: SimPodSpec, sim: SimServer, utilization: number): PodStats {
  const s = sim.stats();
  return {
    model: spec.model,
    url: sim.url,
    max_num_seqs: sim.options.maxNumSeqs,
    max_inflight: s.maxInflightSeen,
    max_running: s.maxRunningSeen,
    completed: s.completed,
    refused_connections: s.refusedConnections,
    throttled: s.throttled,
    overloaded: s.overloaded,
    oom_events: s.oomEvents,
    utilization: round4(utilization),
    ...(Object.keys(s.tenants).length === 0 ? {} : { tenants: tenantStats(s.tenants) }),
  };
}

/** The sim's per-tenant counts in the receipt's shape. */
function tenantStats(tenants: SimStats["tenants"]): Record<string, PodTenantStats> {
  const out: Record<string, PodTenantStats> = {};
  for (const [id, t] of Object.entries(tenants)) {
    out[id] = {
      completed: t.completed,
      aborted: t.aborted,
      prompt_tokens: t.promptTokens,
      completion_tokens: t.completionTokens,
      slot_ms: Math.round(t.slotMs),
    };
  }
  return out;
}

/** A provider in the pods' shape: no slots of its own (`max_num_seqs` 0), 429s as throttles, utilization of its tokens. */
function providerStats(spec: ProviderPodSpec, provider: Provider, utilization: number): PodStats {
  const s = provider.stats();
  return {
    model: spec.model,
    url: provider.url,
    max_num_seqs: 0,
    max_inflight: s.maxInflightSeen,
    max_running: s.maxInflightSeen,
    completed: s.served,
    refused_connections: 0,
    throttled: s.throttled.tokens + s.throttled.requests + s.throttled.inflight,
    overloaded: 0,
    oom_events: 0,
    utilization: round4(utilization),
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
