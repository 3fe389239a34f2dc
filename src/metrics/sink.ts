/**
 * Where metrics go (STYLE G10, after Netflix's `MetricRegistry` / `EmptyMetricRegistry`): code
 * that counts something calls a `MetricSink` by metric name and labels, and knows nothing of
 * Prometheus. The default is `NoopSink`, so counting costs nothing when no one exports metrics.
 */
import type { LabelsOf, MetricNameOf } from "./names.js";

/** Records metrics by name (a constant of `names.ts`) and labels (typed per metric). */
export interface MetricSink {
  /** Adds `value` (≥ 0, **Default:** 1) to a counter. */
  counter<N extends MetricNameOf<"counter">>(name: N, labels: LabelsOf<N>, value?: number): void;
  /** Sets a gauge to `value`. */
  gauge<N extends MetricNameOf<"gauge">>(name: N, labels: LabelsOf<N>, value: number): void;
  /** Records one observation (in the metric's unit, e.g. seconds) into a histogram. */
  histogram<N extends MetricNameOf<"histogram">>(name: N, labels: LabelsOf<N>, value: number): void;
}

/** A sink that drops everything: the default when metrics are off. */
export class NoopSink implements MetricSink {
  counter(): void {}
  gauge(): void {}
  histogram(): void {}
}

/** The shared no-op instance. */
export const noopSink: MetricSink = new NoopSink();
