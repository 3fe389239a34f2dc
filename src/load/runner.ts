/**
 * `sluice load PROFILE`'s engine: for each target (through sluice, then straight to the pods) it
 * starts the profile's pods fresh, starts a gateway in front of them (or uses `--gateway URL`),
 * drives the clients, waits for the drain, checks that every reservation came back (telemetry
 * at zero), and returns what both runs measured.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { Autoscaler } from "./autoscaler.js";
import { Driver, type DriveTarget, type LiveCounts } from "./driver.js";
import { type GatewayThread, startGatewayThread } from "./gateway-thread.js";
import { append, type PodProbe, type RunningPods, startPods } from "./pods.js";
import { warmAccount } from "./provider-pod.js";
import { clientStats, type RunStats } from "./stats.js";
import { observedSettings, readSnapshot, settledReservations } from "./telemetry.js";
import { assertScalable, scaledSeconds } from "./time-scale.js";
import type { ClientGroup, LoadProfile } from "./types.js";

/** What a run shows while it goes (src/load/progress.ts). */
export interface ProgressSink {
  start(label: string, offerMs: number, live: () => LiveCounts & { elapsedMs: number }): void;
  stop(): void;
}

export interface RunnerOptions {
  profile: LoadProfile;
  /** Real ms per seed ms. */
  scale: number;
  /** A gateway already running, configured in front of the pods at `simBasePort` (`--print-config`). */
  gatewayUrl?: string;
  /** First port of the pods; 0 picks free ports. **Default:** `0`. */
  simBasePort?: number;
  /** Run one target only. **Default:** both. */
  only?: "sluice" | "direct";
  progress?: ProgressSink;
}

/** Both runs (three with a profile's `honouring` run) and the settings they ran under (what `config_hash` covers). */
export interface RunnerResult {
  sluice: RunStats | null;
  direct: RunStats | null;
  /** Through sluice with the clients honouring `Retry-After` (`LoadProfile.honouring`); null without one. */
  honouring: RunStats | null;
  /** Through sluice with only `LoadProfile.alone`'s groups offering; null without one. */
  alone?: RunStats | null;
  settings: Record<string, unknown>;
}

/** How long the leak check waits for the telemetry to come back to zero, real ms. */
const LEAK_SETTLE_MS = 5000;

/**
 * Runs `profile` through sluice and straight to its pods. Never throws for a failed run (its stats
 * carry `error`); throws `UnscalableProfileError` before any run for a scale the profile cannot run at.
 */
export async function runProfile(o: RunnerOptions): Promise<RunnerResult> {
  assertScalable(o.profile, o.scale);
  const settings = await settingsOf(o);
  // The reference run (some groups alone) first, with both sides only: `--only` asks for one run.
  const aloneSpec = o.only === undefined ? o.profile.alone : undefined;
  const alone = aloneSpec === undefined ? null : await runTarget(o, "sluice", false, aloneSpec);
  const sluice = o.only === "direct" ? null : await runTarget(o, "sluice");
  // A third side, run with both sides only: `--only` asks for one run.
  const honouring =
    o.only !== undefined || o.profile.honouring === undefined ? null : await runTarget(o, "sluice", true);
  const direct = o.only === "sluice" ? null : await runTarget(o, "direct");
  return { sluice, direct, honouring, ...(o.profile.alone === undefined ? {} : { alone }), settings };
}

/** The profile's groups, each retrying sluice's refusals with the `honouring` run's policy. */
function honouringGroups(profile: LoadProfile): ClientGroup[] {
  const retry = profile.honouring?.retry;
  if (retry === undefined) return profile.groups;
  return profile.groups.map((g) => ({ ...g, retry: { ...g.retry, sluice: retry } }));
}

export { scaledSeconds } from "./time-scale.js";

async function runTarget(
  o: RunnerOptions,
  kind: "sluice" | "direct",
  honouring = false,
  alone?: { label: string; groups: readonly string[] },
): Promise<RunStats> {
  const { profile, scale } = o;
  const profileGroups = honouring ? honouringGroups(profile) : profile.groups;
  const groups =
    alone === undefined ? profileGroups : profileGroups.filter((g) => alone.groups.includes(g.name));
  let pods: RunningPods | undefined;
  const gateways: GatewayThread[] = [];
  let driver: Driver | undefined;
  let autoscaler: Autoscaler | undefined;
  let error: string | undefined;
  let leaks: { count: number; detail: string[] } | null = null;
  let widths: Record<string, number> | null = null;
  let start: PodProbe | undefined;
  let warm: PodProbe | undefined;
  let stop: PodProbe | undefined;
  try {
    pods = await startPods(profile, scale, o.simBasePort ?? 0);
    const configOf = kind === "sluice" ? profile.config : profile.directConfig;
    // The clients take the replicas in turn from this list; the autoscaler appends to it.
    const gatewayUrls: string[] = kind === "sluice" && o.gatewayUrl !== undefined ? [o.gatewayUrl] : [];
    let addReplica: (() => Promise<void>) | undefined;
    if (o.gatewayUrl === undefined && configOf !== undefined) {
      const config = configOf(pods.urls, scaledSeconds(scale));
      for (let i = 0; i < (profile.replicas ?? 1); i++) {
        gateways.push(await startGatewayThread(config, `profile ${profile.name}`));
      }
      // Every replica's thread starts before the run: a start takes 0.5–2 s on a loaded 2-core
      // machine, 5–20 s of seed time at scale 0.1, which would be the autoscaler's pace instead of
      // its looks. A replica the autoscaler has not added yet is idle (no client reaches it).
      const from = profile.autoscale?.from ?? gateways.length;
      gatewayUrls.push(...gateways.slice(0, from).map((g) => g.url));
      addReplica = async () => {
        const next = gateways[gatewayUrls.length];
        if (next === undefined) throw new Error(`no replica left to add past ${gatewayUrls.length}`);
        gatewayUrls.push(next.url);
      };
    }
    const target: DriveTarget =
      gatewayUrls.length > 0
        ? { kind, baseFor: inTurn(gatewayUrls) }
        : { kind, baseFor: roundRobin(pods.urls) };
    const running = pods;
    for (const p of running.pods)
      if (p.kind === "provider") await warmAccount(target.baseFor(p.spec.model), p.spec);
    warm = running.probe();
    start = warm;
    driver = new Driver({
      target,
      groups,
      scale,
      durationMs: profile.durationMs,
      expected: (model) => running.expected(model),
      drainCapMs: (profile.drainMs ?? 2 * profile.durationMs) * scale,
      marks: [
        { atMs: 0, fn: () => (start = running.probe()) },
        { atMs: profile.warmupMs ?? 0, fn: () => (warm = running.probe()) },
        { atMs: profile.durationMs, fn: () => (stop = running.probe()) },
      ],
    });
    const d = driver;
    if (profile.autoscale !== undefined && addReplica !== undefined) {
      autoscaler = new Autoscaler({
        spec: profile.autoscale,
        max: profile.replicas ?? profile.autoscale.from,
        scale,
        now: () => d.now(),
        requests: () => d.requests,
        open: () => d.live.open,
        addReplica,
      });
    }
    const [sluiceLabel, directLabel] = profile.labels ?? ["through sluice", "straight to the pods"];
    const label = alone
      ? alone.label
      : honouring
        ? (profile.honouring?.label ?? sluiceLabel)
        : kind === "sluice"
          ? sluiceLabel
          : directLabel;
    o.progress?.start(label, d.offerMs, () => ({
      ...d.live,
      elapsedMs: d.now(),
    }));
    try {
      const scaling = autoscaler;
      // The autoscaler looks while clients offer work; it stops when they stop.
      const offering = d.run();
      if (scaling !== undefined) {
        scaling.start();
        void sleep(d.offerMs, undefined, { ref: false }).then(() => scaling.stop());
      }
      await offering;
    } finally {
      await autoscaler?.stop();
      o.progress?.stop();
    }
    if (autoscaler?.error !== undefined) throw new Error(autoscaler.error);
    if (kind === "sluice") {
      leaks = { count: 0, detail: [] };
      const everyGateway = o.gatewayUrl !== undefined ? gatewayUrls : gateways.map((g) => g.url);
      for (const [i, url] of everyGateway.entries()) {
        const settled = await settledReservations(url, LEAK_SETTLE_MS);
        leaks.count += settled.count;
        leaks.detail.push(...settled.detail.map((d) => (everyGateway.length > 1 ? `replica ${i}: ${d}` : d)));
        widths ??= Object.fromEntries(settled.snapshot.pods.map((p) => [p.id, p.width]));
      }
    }
  } catch (e) {
    error = e instanceof Error ? e.message : String(e);
  } finally {
    await autoscaler?.stop();
    await Promise.all(gateways.map((g) => g.close().catch(() => undefined)));
  }
  const end = pods?.probe();
  const stats = finish(
    kind,
    o,
    groups.map((g) => g.name),
    driver,
    pods,
    { start, warm, stop: stop ?? end, end },
    leaks,
    widths,
  );
  if (autoscaler !== undefined) stats.replicas_over_time = autoscaler.steps;
  await pods?.close();
  if (error !== undefined) stats.error = error;
  return stats;
}

/** The pods' counters at the run's start, the warm-up's end, the offering's end and the drain's end. */
interface Probes {
  start: PodProbe | undefined;
  warm: PodProbe | undefined;
  stop: PodProbe | undefined;
  end: PodProbe | undefined;
}

function finish(
  kind: "sluice" | "direct",
  o: RunnerOptions,
  /** The groups the driver ran, in its order (its attempts name them by index). */
  groupNames: readonly string[],
  driver: Driver | undefined,
  pods: RunningPods | undefined,
  { start, warm, stop, end }: Probes,
  leaks: { count: number; detail: string[] } | null,
  widths: Record<string, number> | null,
): RunStats {
  const client = clientStats(driver?.attempts ?? [], driver?.requests ?? [], groupNames);
  const podStats = pods && warm && stop ? pods.stats(warm, stop) : [];
  const machines: Record<string, number> = {};
  for (const [name, m] of pods?.machines ?? []) machines[name] = m.maxRunningSeen;
  const oom = new Set((pods?.pods ?? []).flatMap((p) => (p.kind === "sim" ? [p.sim.machine] : [])));
  let afterWarmup = 0;
  if (warm && end) for (const [i, n] of end.refusals.entries()) afterWarmup += n - warm.refusals[i]!;
  return {
    target: kind,
    duration_ms: Math.round(driver?.now() ?? 0),
    ...client,
    upstream_max_inflight: Math.max(0, ...podStats.map((p) => p.max_inflight)),
    machine_max_running: machines,
    utilization: pods && warm && stop ? pods.utilization(warm, stop) : 0,
    pod_refusals: podStats.reduce((n, p) => n + p.refused_connections + p.throttled + p.overloaded, 0),
    pod_refusals_after_warmup: afterWarmup,
    throttles: podStats.reduce((n, p) => n + p.throttled, 0),
    oom_events: [...oom].reduce((n, m) => n + m.oomEvents, 0),
    accounts: pods && start ? pods.accounts(start, o.profile.durationMs * o.scale) : [],
    leaked_reservations: kind === "sluice" ? (leaks?.count ?? null) : null,
    leak_detail: leaks?.detail ?? [],
    widths,
    pods: podStats,
  };
}

/**
 * The gateways in turn: clients spread over replicas behind a load balancer; a group pinned to
 * a replica always takes that one (of those running: modulo their number).
 */
function inTurn(urls: string[]): (model: string, replica?: number) => string {
  let i = 0;
  return (_model, replica) =>
    replica === undefined ? urls[i++ % urls.length]! : urls[replica % urls.length]!;
}

/** Each model's pods in turn: what a client without a gateway does. */
function roundRobin(urls: Readonly<Record<string, string[]>>): (model: string) => string {
  const next = new Map<string, number>();
  return (model) => {
    const list = urls[model];
    if (list === undefined || list.length === 0) throw new Error(`no pod serves model "${model}"`);
    const i = next.get(model) ?? 0;
    next.set(model, (i + 1) % list.length);
    return list[i]!;
  };
}

/**
 * What the runs ran under, for `config_hash`: the profile's pods, machines, clients and time
 * scale, and the gateway's settings — the config (with placeholder pod URLs, so free ports do not
 * change the hash) or, for an external gateway, the limits its snapshot shows.
 */
async function settingsOf(o: RunnerOptions): Promise<Record<string, unknown>> {
  const { profile, scale } = o;
  const placeholders: Record<string, string[]> = {};
  for (const [i, p] of profile.pods.entries()) append(placeholders, p.model, `http://pod-${i}.invalid`);
  const gateway =
    o.gatewayUrl === undefined
      ? { source: "in-process", config: profile.config(placeholders, scaledSeconds(scale)) }
      : {
          source: "external",
          url: o.gatewayUrl,
          observed: observedSettings(await readSnapshot(o.gatewayUrl)),
        };
  return {
    profile: profile.name,
    time_scale: scale,
    ...(profile.replicas === undefined ? {} : { replicas: profile.replicas }),
    ...(profile.autoscale === undefined ? {} : { autoscale: profile.autoscale }),
    ...(profile.honouring === undefined ? {} : { honouring: profile.honouring }),
    ...(profile.alone === undefined ? {} : { alone: profile.alone }),
    ...(profile.directConfig === undefined
      ? {}
      : { direct_gateway: profile.directConfig(placeholders, scaledSeconds(scale)) }),
    pods: profile.pods,
    machines: profile.machines ?? {},
    groups: profile.groups,
    duration_ms: profile.durationMs,
    warmup_ms: profile.warmupMs ?? 0,
    drain_ms: profile.drainMs ?? 2 * profile.durationMs,
    gateway,
  };
}
