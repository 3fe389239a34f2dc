/**
 * Every metric sluice exports, in one place (DESIGN §4, STYLE G10, after Netflix's `MetricIds`):
 * its name, kind, help text, label names and, for histograms, its buckets. Sinks, the gateway,
 * the docs (docs/metrics.md) and the tests all read these constants; nothing else spells a
 * metric name.
 */
import { CAPACITY_REFUSAL_CODES } from "../core/errors.js";

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

/** Buckets of `sluice_upstream_ttfb_seconds`: from a loopback answer to a long prefill. */
export const TTFB_BUCKETS_S: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

/** Names of every metric, by a short id (Netflix's `MetricIds`). */
export const MetricIds = {
  laneInflight: "sluice_lane_inflight",
  laneLimit: "sluice_lane_limit",
  laneQueueDepth: "sluice_lane_queue_depth",
  laneState: "sluice_lane_state",
  laneQueueWaitSeconds: "sluice_lane_queue_wait_seconds",
  laneQueueTimeoutsTotal: "sluice_lane_queue_timeouts_total",
  refusalsTotal: "sluice_refusals_total",
  wouldRefuseTotal: "sluice_would_refuse_total",
  podWidth: "sluice_pod_width",
  podCeiling: "sluice_pod_ceiling",
  podInflight: "sluice_pod_inflight",
  breakerState: "sluice_breaker_state",
  upstreamOverloadsTotal: "sluice_upstream_overloads_total",
  upstreamFailuresTotal: "sluice_upstream_failures_total",
  tokensTotal: "sluice_tokens_total",
  upstreamTtfbSeconds: "sluice_upstream_ttfb_seconds",
  groupInflight: "sluice_group_inflight",
  storeErrorsTotal: "sluice_store_errors_total",
  requestsTotal: "sluice_requests_total",
  requestDurationSeconds: "sluice_request_duration_seconds",
  keyInflight: "sluice_key_inflight",
  keyRequestsTotal: "sluice_key_requests_total",
  keyQueued: "sluice_key_queued",
  tenantInflight: "sluice_tenant_inflight",
  tenantQueued: "sluice_tenant_queued",
  laneFlowInflight: "sluice_lane_flow_inflight",
  laneFlowQueued: "sluice_lane_flow_queued",
  laneFlowShare: "sluice_lane_flow_share",
  bucketUsedPerMinute: "sluice_bucket_used_per_minute",
  bucketAvailable: "sluice_bucket_available",
  bucketPerMinute: "sluice_bucket_per_minute",
  bucketReserve: "sluice_bucket_reserve",
  accountInflight: "sluice_account_inflight",
  accountCap: "sluice_account_cap",
  accountThrottledPerMinute: "sluice_account_throttled_per_minute",
  clientStalledTotal: "sluice_client_stalled_total",
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
  [MetricIds.laneState]: {
    kind: "gauge",
    help: "Why the lane's callers wait (seed 002): 1 for the state it is in now — ok, local_queue (every slot in use, callers queue at the lane's limit) or gateway_degraded (a pod tripped, paused or narrowed: the servers took capacity away) — 0 for the others.",
    labels: ["lane", "state"],
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
    help: "Requests sluice answered no, by lane ('-' before the lane is known) and reason (the refusal's code).",
    labels: ["lane", "reason"],
  },
  [MetricIds.wouldRefuseTotal]: {
    kind: "counter",
    help: "Shadow mode: requests sluice would have refused and let through, by lane and reason.",
    labels: ["lane", "reason"],
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
  [MetricIds.upstreamFailuresTotal]: {
    kind: "counter",
    help: "Failed upstream attempts, re-dispatched or not, by pod and cause (refused, reset, timeout, status).",
    labels: ["pod", "cause"],
  },
  [MetricIds.upstreamTtfbSeconds]: {
    kind: "histogram",
    help: "Time from sending a call to its pod to the first byte of the pod's answer (its headers), by lane.",
    labels: ["lane"],
    buckets: TTFB_BUCKETS_S,
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
    help: "Whole request time at the gateway, queue wait included, until the last byte, by lane and outcome.",
    labels: ["lane", "outcome"],
    buckets: REQUEST_DURATION_BUCKETS_S,
  },
  [MetricIds.keyInflight]: {
    kind: "gauge",
    help: "Calls of the client key holding a slot now (auth.keys[].id; read from the snapshot).",
    labels: ["key"],
  },
  [MetricIds.keyRequestsTotal]: {
    kind: "counter",
    help: "Requests the gateway answered, by client key (auth.keys[].id, '-' when unauthenticated) and outcome.",
    labels: ["key", "outcome"],
  },
  [MetricIds.keyQueued]: {
    kind: "gauge",
    help: "Calls of the client key waiting in a lane's queue now (auth.keys[].id; read from the snapshot).",
    labels: ["key"],
  },
  [MetricIds.tenantInflight]: {
    kind: "gauge",
    help: "Calls of the tenant's keys holding a slot now (tenants.NAME; read from the snapshot).",
    labels: ["tenant"],
  },
  [MetricIds.tenantQueued]: {
    kind: "gauge",
    help: "Calls of the tenant's keys waiting in a lane's queue now (tenants.NAME; read from the snapshot).",
    labels: ["tenant"],
  },
  [MetricIds.laneFlowInflight]: {
    kind: "gauge",
    help: "Calls of the flow (key:ID, tenant:NAME or anonymous) in flight on the lane now, while a configured key's call waits or runs there (read from the snapshot's lanes[].flows).",
    labels: ["lane", "flow"],
  },
  [MetricIds.laneFlowQueued]: {
    kind: "gauge",
    help: "Calls of the flow waiting in the lane's queue now (read from the snapshot's lanes[].flows).",
    labels: ["lane", "flow"],
  },
  [MetricIds.laneFlowShare]: {
    kind: "gauge",
    help: "The flow's configured share of the lane, 0..1: its weight over the weights of the flows active on the lane (read from the snapshot's lanes[].flows).",
    labels: ["lane", "flow"],
  },
  [MetricIds.bucketUsedPerMinute]: {
    kind: "gauge",
    help: "What a token or request bucket charged over the last minute, net of refunds (this replica's grants), by budget and unit: against the bucket's per-minute rate, how much of the budget is used.",
    labels: ["budget", "unit"],
  },
  [MetricIds.bucketAvailable]: {
    kind: "gauge",
    help: "What a token or request bucket (tpm / rpm) holds now, by budget (the lane, account:NAME, key:ID or tenant:NAME) and unit; negative while in debt.",
    labels: ["budget", "unit"],
  },
  [MetricIds.bucketPerMinute]: {
    kind: "gauge",
    help: "A token or request bucket's rate and capacity per minute (its tpm or rpm), by budget and unit.",
    labels: ["budget", "unit"],
  },
  [MetricIds.bucketReserve]: {
    kind: "gauge",
    help: "What a token or request bucket keeps for interactive calls (its tpm_reserve or rpm_reserve): other classes leave at least this much, by budget and unit.",
    labels: ["budget", "unit"],
  },
  [MetricIds.accountInflight]: {
    kind: "gauge",
    help: "Calls in flight across the provider account's models now.",
    labels: ["account"],
  },
  [MetricIds.accountCap]: {
    kind: "gauge",
    help: "The provider account's adaptive in-flight cap now (cut on throttling, grown on success); absent without max_inflight.",
    labels: ["account"],
  },
  [MetricIds.accountThrottledPerMinute]: {
    kind: "gauge",
    help: "Answers that said slow down (429, 503, 529) on the provider account's models over the last minute.",
    labels: ["account"],
  },
  [MetricIds.clientStalledTotal]: {
    kind: "counter",
    help: "Calls given up because their client accepted nothing for stream_idle_timeout_s (its slot freed), by lane.",
    labels: ["lane"],
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

/**
 * The `lane` value of a request that ended before its lane was known (401, 404, a pre-body
 * refusal of the gateway-wide bound), and the `key` value of one that never authenticated.
 */
export const NO_LANE = "-";

/** The `key` value of a request that never authenticated (401). */
export const NO_KEY = "-";

/**
 * How a request ended: the `outcome` label of `sluice_request_duration_seconds` and
 * `sluice_key_requests_total`, so refusals (answered in microseconds) never pollute the latency
 * of answers. Exactly one per request, decided in this order:
 *
 * - `client_gone`: the client disconnected before its answer was complete (while queued, while
 *   its body was read, or mid-answer).
 * - `refused`: sluice refused it for capacity: 429 `queue_full`, `key_limit`, `quota_paused`;
 *   503 `queue_timeout`, `upstream_unavailable`, `store_unavailable`, `draining`.
 * - `client_error`: the request itself was not acceptable: a 4xx the gateway answered (400
 *   `bad_request`, 401, 404, 405, 408, 413, 415), or a 4xx other than 429 from the pod.
 * - `upstream_error`: the pod failed it: connection refused or reset, a timeout, an answer cut
 *   short, or the pod's own 429 or 5xx passed on.
 * - `internal_error`: the gateway itself failed (500, logged as `unexpected gateway error`).
 * - `ok`: the pod's answer, status below 400, forwarded whole.
 */
export const REQUEST_OUTCOMES = [
  "ok",
  "refused",
  "client_error",
  "upstream_error",
  "client_gone",
  "internal_error",
] as const;

/** One value of the `outcome` label. */
export type RequestOutcome = (typeof REQUEST_OUTCOMES)[number];

/**
 * Why an upstream attempt failed: the `cause` label of `sluice_upstream_failures_total` (the
 * same set as the gateway's `UpstreamFailure.cause`). `refused`: connect refused; `reset`: the
 * connection was reset or closed before a complete answer; `timeout`: no answer head, or no
 * chunk, within the model's timeouts; `status`: the pod answered an overload status.
 */
export const UPSTREAM_FAILURE_CAUSES = ["refused", "reset", "timeout", "status"] as const;

/** One value of the `cause` label. */
export type UpstreamFailureCause = (typeof UPSTREAM_FAILURE_CAUSES)[number];

/** The values of the `priority` label, by rank (0 = interactive … 2 = bulk). */
export const PRIORITY_LABELS = ["interactive", "default", "bulk"] as const;

/** The values of the `kind` label of `sluice_tokens_total`. */
export type TokenKind = "prompt" | "completion";

/** `sluice_breaker_state` values: 0 closed, 1 half_open, 2 open (worse is higher, so `max` works). */
export const BREAKER_STATE_VALUES = { closed: 0, half_open: 1, open: 2 } as const;

/**
 * Every refusal reason sluice or its gateway can give (DESIGN §3.2 codes): the capacity refusals
 * (from the error classes, `CAPACITY_REFUSAL_CODES`), then the gateway's bad-input codes;
 * `refusals_total` starts each at 0 so `rate()` sees the series before the first refusal.
 */
export const REFUSAL_REASONS = [
  ...CAPACITY_REFUSAL_CODES,
  "body_too_large",
  "request_timeout",
  "bad_request",
  "unsupported_media_type",
  "unauthorized",
  "unknown_model",
] as const;
