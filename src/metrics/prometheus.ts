/**
 * The prom-client adapter (DESIGN §4, STYLE G10). Each `PrometheusMetrics` owns its own
 * `Registry`, never prom-client's global one, so several gateways in one process (tests) never
 * collide. Counters and histograms are fed by the governor's events and the gateway's calls
 * (`MetricsRecorder`); every gauge is read from `governor.snapshot()` in prom-client's `collect()`
 * at scrape time, so keeping them costs nothing between scrapes.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { Snapshot } from "../core/snapshot.js";
import type { Governor } from "../governor/governor.js";
import {
  type LabelsOf,
  METRIC_PREFIX,
  METRICS,
  MetricIds,
  type MetricName,
  type MetricNameOf,
  NO_LANE,
  REFUSAL_REASONS,
  UPSTREAM_FAILURE_CAUSES,
} from "./names.js";
import { type GovernorEventSource, MetricsRecorder, type MetricsRecorderOptions } from "./recorder.js";
import type { MetricSink } from "./sink.js";
import { gaugeSamples } from "./snapshot-gauges.js";

/** What the gauges read at scrape time. */
export type SnapshotSource = Pick<Governor, "snapshot">;

/** Options of {@link PrometheusMetrics}. */
export interface PrometheusMetricsOptions extends MetricsRecorderOptions {
  /** Registry to register into. **Default:** a new one owned by this instance (never the global). */
  registry?: Registry;
  /** Replaces `sluice_` at the start of every name, e.g. `"acme_sluice_"`. **Default:** `"sluice_"`. */
  prefix?: string;
  /** Also export prom-client's process metrics (CPU, memory, event loop), unprefixed. **Default:** `false`. */
  defaultMetrics?: boolean;
}

/** One level of the labelled-children tree (see `PrometheusSink.#child`). */
interface ChildNode {
  next: Map<string, ChildNode>;
  child: unknown;
}

/** A `MetricSink` over prom-client metrics registered in one registry. */
export class PrometheusSink implements MetricSink {
  readonly registry: Registry;
  readonly #source: SnapshotSource;
  readonly #counters = new Map<MetricName, Counter<string>>();
  readonly #gauges = new Map<MetricName, Gauge<string>>();
  readonly #histograms = new Map<MetricName, Histogram<string>>();
  /** Registered names (with the prefix), removed again by `unregister()`. */
  readonly #registered: string[] = [];
  /** One snapshot serves every gauge of one scrape (prom-client calls each `collect` in one turn). */
  #scrape: Snapshot | undefined;

  constructor(source: SnapshotSource, options: Pick<PrometheusMetricsOptions, "registry" | "prefix"> = {}) {
    this.#source = source;
    this.registry = options.registry ?? new Registry();
    const prefix = options.prefix ?? METRIC_PREFIX;
    for (const [name, def] of Object.entries(METRICS) as [MetricName, (typeof METRICS)[MetricName]][]) {
      const config = {
        name: prefix + name.slice(METRIC_PREFIX.length),
        help: def.help,
        labelNames: def.labels as readonly string[],
        registers: [this.registry],
      };
      this.#registered.push(config.name);
      if (def.kind === "counter") this.#counters.set(name, new Counter(config));
      else if (def.kind === "histogram") {
        const buckets = [...("buckets" in def ? def.buckets : [])];
        this.#histograms.set(name, new Histogram({ ...config, buckets }));
      } else {
        const gaugeName = name as MetricNameOf<"gauge">;
        const gauge: Gauge<string> = new Gauge({ ...config, collect: () => this.#fill(gaugeName, gauge) });
        this.#gauges.set(name, gauge);
      }
    }
  }

  /**
   * Labelled children by metric and label values. prom-client hashes the label object on every
   * update; the gateway updates a few counters per request, so it asks once per label set.
   */
  readonly #children = new Map<MetricName, ChildNode>();

  #child(kind: "c" | "h", name: MetricName, labels: Record<string, string>): unknown {
    // A tree keyed by label values in order: no key string is built per update.
    let node: ChildNode | undefined = this.#children.get(name);
    if (node === undefined) {
      node = { next: new Map(), child: undefined };
      this.#children.set(name, node);
    }
    for (const k in labels) {
      const v = labels[k]!;
      let next: ChildNode | undefined = node.next.get(v);
      if (next === undefined) {
        next = { next: new Map(), child: undefined };
        node.next.set(v, next);
      }
      node = next;
    }
    node.child ??=
      kind === "c" ? this.#counters.get(name)!.labels(labels) : this.#histograms.get(name)!.labels(labels);
    return node.child;
  }

  counter<N extends MetricNameOf<"counter">>(name: N, labels: LabelsOf<N>, value = 1): void {
    (this.#child("c", name, labels as Record<string, string>) as { inc(v: number): void }).inc(value);
  }

  /** Sets a gauge until the next scrape, which replaces every gauge with the snapshot's values. */
  gauge<N extends MetricNameOf<"gauge">>(name: N, labels: LabelsOf<N>, value: number): void {
    this.#gauges.get(name)!.set(labels, value);
  }

  histogram<N extends MetricNameOf<"histogram">>(name: N, labels: LabelsOf<N>, value: number): void {
    (this.#child("h", name, labels as Record<string, string>) as { observe(v: number): void }).observe(value);
  }

  /** Removes this sink's metrics from the registry (a shared registry stays usable). */
  unregister(): void {
    this.#children.clear();
    for (const name of this.#registered.splice(0)) this.registry.removeSingleMetric(name);
  }

  #fill(name: MetricNameOf<"gauge">, gauge: Gauge<string>): void {
    // Reset first: a label set the snapshot no longer has must disappear, not keep its last value.
    gauge.reset();
    for (const [labels, value] of gaugeSamples(name, this.#snapshot())) gauge.set(labels, value);
  }

  #snapshot(): Snapshot {
    if (this.#scrape === undefined) {
      this.#scrape = this.#source.snapshot();
      queueMicrotask(() => {
        this.#scrape = undefined;
      });
    }
    return this.#scrape;
  }
}

/**
 * sluice's Prometheus metrics for one governor (and the gateway in front of it): the §4 names,
 * fed by the governor's events, the snapshot at scrape time, and the gateway's calls
 * (`refusal`, `wouldRefuse`, `upstreamOverload`, `upstreamFailure`, `tokens`, `storeError`,
 * `request`).
 *
 * ```ts
 * const metrics = new PrometheusMetrics(governor);
 * res.writeHead(200, { "content-type": metrics.contentType }).end(await metrics.render());
 * ```
 */
export class PrometheusMetrics extends MetricsRecorder {
  /** The registry holding the metrics (this instance's own unless one was passed). */
  readonly registry: Registry;
  readonly #sink: PrometheusSink;
  readonly #ownsRegistry: boolean;
  readonly #source: SnapshotSource;

  constructor(governor: GovernorEventSource & SnapshotSource, options: PrometheusMetricsOptions = {}) {
    const sink = new PrometheusSink(governor, options);
    super(governor, sink, options);
    this.#sink = sink;
    this.#ownsRegistry = options.registry === undefined;
    this.registry = sink.registry;
    this.#source = governor;
    this.startSeries();
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * Starts the series an alert watches at 0, so `rate()` and `increase()` see the first event
   * instead of a series that appears at 1: every refusal reason on every lane of the snapshot
   * (and `-`), every failure cause on every pod, the stalled clients of every lane. Called at construction; call again after lanes
   * or pods were added (a reload). Existing counts are kept.
   */
  startSeries(): void {
    const { lanes, pods } = this.#source.snapshot();
    const sink = this.#sink;
    for (const lane of [NO_LANE, ...lanes.map((l) => l.lane)])
      for (const reason of REFUSAL_REASONS) sink.counter(MetricIds.refusalsTotal, { lane, reason }, 0);
    for (const { lane } of lanes) sink.counter(MetricIds.clientStalledTotal, { lane }, 0);
    for (const { id: pod } of pods)
      for (const cause of UPSTREAM_FAILURE_CAUSES)
        sink.counter(MetricIds.upstreamFailuresTotal, { pod, cause }, 0);
  }

  /**
   * A call given up because its client accepted nothing for `stream_idle_timeout_s`
   * (`sluice_client_stalled_total`).
   */
  clientStalled(lane: string): void {
    this.#sink.counter(MetricIds.clientStalledTotal, { lane });
  }

  /** The sink the metrics are recorded into (for code that takes a plain `MetricSink`). */
  get sink(): MetricSink {
    return this.#sink;
  }

  /** The `Content-Type` of {@link render}'s text (Prometheus text format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text of every metric, gauges read from the snapshot now. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  /**
   * Stops listening to the governor and removes sluice's metrics from the registry (an own
   * registry is cleared entirely, process metrics included). Idempotent.
   */
  override close(): void {
    super.close();
    this.#sink.unregister();
    if (this.#ownsRegistry) this.registry.clear();
  }
}
