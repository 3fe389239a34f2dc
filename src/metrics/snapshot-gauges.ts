/**
 * Every gauge sluice exports is read from the snapshot (DESIGN §4) when someone asks, never kept
 * up to date on the hot path. This table says which snapshot field feeds which gauge; it is pure,
 * so any sink (Prometheus at scrape time, a push sink on a timer) can use it.
 */
import type { FlowShareSnapshot } from "../core/flow-shares.js";
import type { BucketSnapshot, Snapshot } from "../core/snapshot.js";
import { WAIT_STATES } from "../core/wait-state.js";
import {
  BREAKER_STATE_VALUES,
  type LabelsOf,
  MetricIds,
  type MetricNameOf,
  PRIORITY_LABELS,
} from "./names.js";
import type { MetricSink } from "./sink.js";

/** One gauge value: its labels and its number. */
export type GaugeSample<N extends MetricNameOf<"gauge">> = readonly [labels: LabelsOf<N>, value: number];

/** For each gauge, the samples a snapshot gives it. */
export const SNAPSHOT_GAUGES: {
  readonly [N in MetricNameOf<"gauge">]: (s: Snapshot) => GaugeSample<N>[];
} = {
  [MetricIds.laneInflight]: (s) => s.lanes.map((l) => [{ lane: l.lane }, l.inflight]),
  [MetricIds.laneLimit]: (s) => s.lanes.map((l) => [{ lane: l.lane }, l.limit]),
  [MetricIds.laneQueueDepth]: (s) =>
    s.lanes.flatMap((l) =>
      PRIORITY_LABELS.map((p) => [{ lane: l.lane, priority: p }, l.queued_by_priority[p]]),
    ),
  [MetricIds.laneState]: (s) =>
    s.lanes.flatMap((l) => WAIT_STATES.map((state) => [{ lane: l.lane, state }, l.state === state ? 1 : 0])),
  [MetricIds.podWidth]: (s) => s.pods.map((p) => [{ pod: p.id }, p.width]),
  [MetricIds.podCeiling]: (s) => s.pods.map((p) => [{ pod: p.id }, p.ceiling]),
  [MetricIds.podInflight]: (s) => s.pods.map((p) => [{ pod: p.id }, p.inflight]),
  [MetricIds.breakerState]: (s) => s.pods.map((p) => [{ pod: p.id }, BREAKER_STATE_VALUES[p.breaker]]),
  [MetricIds.groupInflight]: (s) => s.groups.map((g) => [{ group: g.group }, g.inflight]),
  [MetricIds.keyInflight]: (s) => s.keys.map((k) => [{ key: k.key }, k.inflight]),
  [MetricIds.keyQueued]: (s) => s.keys.map((k) => [{ key: k.key }, k.queued]),
  [MetricIds.tenantInflight]: (s) => (s.tenants ?? []).map((t) => [{ tenant: t.tenant }, t.inflight]),
  [MetricIds.tenantQueued]: (s) => (s.tenants ?? []).map((t) => [{ tenant: t.tenant }, t.queued]),
  [MetricIds.laneFlowInflight]: (s) => flows(s).map(([labels, f]) => [labels, f.inflight]),
  [MetricIds.laneFlowQueued]: (s) => flows(s).map(([labels, f]) => [labels, f.queued]),
  [MetricIds.laneFlowShare]: (s) => flows(s).map(([labels, f]) => [labels, f.share]),
  [MetricIds.bucketUsedPerMinute]: (s) => buckets(s).map(([labels, b]) => [labels, b.used_1m]),
  [MetricIds.bucketAvailable]: (s) => buckets(s).map(([labels, b]) => [labels, b.available]),
  [MetricIds.bucketPerMinute]: (s) => buckets(s).map(([labels, b]) => [labels, b.per_minute]),
  [MetricIds.bucketReserve]: (s) => buckets(s).map(([labels, b]) => [labels, b.reserve]),
  [MetricIds.accountInflight]: (s) => s.accounts.map((a) => [{ account: a.account }, a.inflight]),
  [MetricIds.accountCap]: (s) =>
    s.accounts.flatMap((a) => (a.adaptive_cap === null ? [] : [[{ account: a.account }, a.adaptive_cap]])),
  [MetricIds.accountThrottledPerMinute]: (s) =>
    s.accounts.map((a) => [{ account: a.account }, a.throttled_1m]),
};

/**
 * Every lane's flows (keys and tenants active on it): at most lanes × (keys without a tenant +
 * tenants + 1 anonymous), all configured names, and only while they wait or run there.
 */
function flows(s: Snapshot): [{ lane: string; flow: string }, FlowShareSnapshot][] {
  return s.lanes.flatMap((l) =>
    (l.flows ?? []).map((f): [{ lane: string; flow: string }, FlowShareSnapshot] => [
      { lane: l.lane, flow: f.flow },
      f,
    ]),
  );
}

/**
 * Every token and request bucket of the snapshot: the lanes' own, the accounts', the keys' and the
 * tenants' (configured names only, so the label values stay as few as the config's entries).
 */
function buckets(s: Snapshot): [{ budget: string; unit: string }, BucketSnapshot][] {
  const out: [{ budget: string; unit: string }, BucketSnapshot][] = [];
  for (const l of s.lanes) {
    if (l.tokens !== undefined) out.push([{ budget: l.lane, unit: "tokens" }, l.tokens]);
    if (l.requests !== undefined) out.push([{ budget: l.lane, unit: "requests" }, l.requests]);
  }
  for (const a of s.accounts) {
    if (a.tokens !== null) out.push([{ budget: `account:${a.account}`, unit: "tokens" }, a.tokens]);
    if (a.requests !== null) out.push([{ budget: `account:${a.account}`, unit: "requests" }, a.requests]);
  }
  for (const k of s.keys) {
    if (k.tokens) out.push([{ budget: `key:${k.key}`, unit: "tokens" }, k.tokens]);
    if (k.requests) out.push([{ budget: `key:${k.key}`, unit: "requests" }, k.requests]);
  }
  for (const t of s.tenants ?? []) {
    if (t.tokens !== null) out.push([{ budget: `tenant:${t.tenant}`, unit: "tokens" }, t.tokens]);
    if (t.requests !== null) out.push([{ budget: `tenant:${t.tenant}`, unit: "requests" }, t.requests]);
  }
  return out;
}

/** Writes every snapshot gauge into `sink`. */
export function writeSnapshotGauges(snapshot: Snapshot, sink: MetricSink): void {
  for (const name of Object.keys(SNAPSHOT_GAUGES) as MetricNameOf<"gauge">[]) {
    for (const [labels, value] of gaugeSamples(name, snapshot)) sink.gauge(name, labels, value);
  }
}

/** The samples of one gauge (a typed lookup into {@link SNAPSHOT_GAUGES}). */
export function gaugeSamples<N extends MetricNameOf<"gauge">>(name: N, snapshot: Snapshot): GaugeSample<N>[] {
  return (SNAPSHOT_GAUGES[name] as (s: Snapshot) => GaugeSample<N>[])(snapshot);
}
