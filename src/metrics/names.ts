/**
 * Every metric sluice exports, in one place (DESIGN §4, STYLE G10, after Netflix's `MetricIds`):
 * its name, kind, help text, label names and, for histograms, its buckets. Sinks, the gateway,
 * the docs (docs/metrics.md) and the tests all read these constants; nothing else spells a
 * metric name.
 */

/** The prefix of every name below; `PrometheusMetrics` can swap it (`options.prefix`). */
export const METRIC_PREFIX = "sluice_";

/** Buckets of `sluice_lane_queue_wait_seconds`, in seconds (DESIGN §4). */
export const QUEUE_WAIT_BUCKETS_S: readonly number[] = [0.1, 0.5, 1, 5, 15, 30, 60, 120, 300];

/**
 * Buckets of `sluice_request_duration_seconds`, in seconds: whole requests, queue wait included,
 * from an embedding call (tens of ms) to a long generation (minutes).
 */
export const REQUEST_DURATION_BUCKETS_S: readonly number[] = [
  0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];

/** Names of every metric, by a short id (Netflix's `MetricIds`). */
export const MetricIds = {
  laneInflight: "sluice_lane_inflight",
  laneLimit: "sluice_lane_limit",
  laneQueueDepth: "sluice_lane_queue_depth",
  laneQueueWaitSeconds: "sluice_lane_queue_wait_seconds",
  laneQueueTimeoutsTotal: "sluice_lane_queue_timeouts_total",
  refusalsTotal: "sluice_refusals_total",
  wouldRefuseTotal: "sluice_would_refuse_total",
  podWidth: "sluice_pod_width",
  podCeiling: "sluice_pod_ceiling",
  podInflight: "sluice_pod_inflight",
  breakerState: "sluice_breaker_state",
  upstreamOverloadsTotal: "sluice_upstream_overloads_total",
  tokensTotal: "sluice_tokens_total",
  groupInflight: "sluice_group_inflight",
  storeErrorsTotal: "sluice_store_errors_total",
  requestsTotal: "sluice_requests_total",
  requestDurationSeconds: "sluice_request_duration_seconds",
} as const;

/** Any metric's name. */
export type MetricName = (typeof MetricIds)[keyof typeof MetricIds];

/** What a metric is; decides which `MetricSink` method records it. */
export type MetricKind = "counter" | "gauge" | "histogram";

/** One metric's definition. */
export interface MetricDef {
  readonly kind: MetricKind;
  readonly help: string;
  readonly labels: readonly string[];
  /** Histograms only: upper bounds in the metric's unit. */
  readonly buckets?: readonly number[];
}

/**
 * Every metric's definition. `as const` keeps the label tuples literal, so `LabelsOf<N>` types
 * each call's labels.
 */
export const METRICS = {
  [MetricIds.laneInflight]: {
    kind: "gauge",
    help: "Calls holding a slot of the lane now (read from the snapshot at scrape time).",
    labels: ["lane"],
  },
  [MetricIds.laneLimit]: {
    kind: "gauge",
    help: "The lane's configured limit of calls in flight (max_concurrent_requests).",
    labels: ["lane"],
  },
  [MetricIds.laneQueueDepth]: {
    kind: "gauge",
    help: "Calls waiting in the lane's queue now, by their own priority class.",
    labels: ["lane", "priority"],
  },
  [MetricIds.laneQueueWaitSeconds]: {
    kind: "histogram",
    help: "Time a granted call waited for model capacity; immediate grants count as 0.",
    labels: ["lane", "priority"],
    buckets: QUEUE_WAIT_BUCKETS_S,
  },
  [MetricIds.laneQueueTimeoutsTotal]: {
    kind: "counter",
    help: "Calls refused after waiting the lane's whole queue timeout (503 queue_timeout).",
    labels: ["lane"],
  },
  [MetricIds.refusalsTotal]: {
    kind: "counter",
    help: "Requests sluice answered no, by reason (the refusal's error code).",
    labels: ["reason"],
  },
  [MetricIds.wouldRefuseTotal]: {
    kind: "counter",
    help: "Shadow mode: requests sluice would have refused, by reason, and let through.",
    labels: ["reason"],
  },
  [MetricIds.podWidth]: {
    kind: "gauge",
    help: "The pod's adaptive width (AIMD): calls it may carry at once now.",
    labels: ["pod"],
  },
  [MetricIds.podCeiling]: {
    kind: "gauge",
    help: "The pod's configured ceiling (max_inflight); the width never goes above it.",
    labels: ["pod"],
  },
  [MetricIds.podInflight]: {
    kind: "gauge",
    help: "Calls dispatched to the pod and not yet ended.",
    labels: ["pod"],
  },
  [MetricIds.breakerState]: {
    kind: "gauge",
    help: "The pod's circuit breaker: 0 closed, 1 half_open, 2 open.",
    labels: ["pod"],
  },
  [MetricIds.upstreamOverloadsTotal]: {
    kind: "counter",
    help: "Overload answers from a pod (429, 503, connection refused…), by pod and status.",
    labels: ["pod", "status"],
  },
  [MetricIds.tokensTotal]: {
    kind: "counter",
    help: "Tokens reported by upstream usage, by lane and kind (prompt or completion).",
    labels: ["lane", "kind"],
  },
  [MetricIds.groupInflight]: {
    kind: "gauge",
    help: "Calls counted against the GPU group's shared budget now.",
    labels: ["group"],
  },
  [MetricIds.storeErrorsTotal]: {
    kind: "counter",
    help: "Fleet store operations that failed (timeouts, connection errors, script errors).",
    labels: [],
  },
  [MetricIds.requestsTotal]: {
    kind: "counter",
    help: "Requests the gateway answered, by lane and HTTP status.",
    labels: ["lane", "status"],
  },
  [MetricIds.requestDurationSeconds]: {
    kind: "histogram",
    help: "Whole request time at the gateway, queue wait included, until the last byte.",
    labels: ["lane"],
    buckets: REQUEST_DURATION_BUCKETS_S,
  },
} as const satisfies Record<MetricName, MetricDef>;

/** Names of the metrics of one kind. */
export type MetricNameOf<K extends MetricKind> = {
  [N in MetricName]: (typeof METRICS)[N]["kind"] extends K ? N : never;
}[MetricName];

/** The label set of metric `N`: every label name it declares, each a string. */
export type LabelsOf<N extends MetricName> = {
  readonly [L in (typeof METRICS)[N]["labels"][number]]: string;
};

/** Label value used when a request ended before its lane was known (e.g. 401, 404). */
export const NO_LANE = "none";

/** The values of the `priority` label, by rank (0 = interactive … 2 = bulk). */
export const PRIORITY_LABELS = ["interactive", "default", "bulk"] as const;

/** The values of the `kind` label of `sluice_tokens_total`. */
export type TokenKind = "prompt" | "completion";

/** `sluice_breaker_state` values: 0 closed, 1 half_open, 2 open (worse is higher, so `max` works). */
export const BREAKER_STATE_VALUES = { closed: 0, half_open: 1, open: 2 } as const;

/**
 * Every refusal reason sluice or its gateway can give (DESIGN §3.2 codes); `refusals_total` starts
 * each at 0 so `rate()` sees the series before the first refusal.
 */
export const REFUSAL_REASONS = [
  "queue_full",
  "key_limit",
  "rate_limit",
  "queue_timeout",
  "upstream_unavailable",
  "store_unavailable",
  "draining",
  "body_too_large",
  "bad_request",
  "unauthorized",
  "unknown_model",
] as const;
