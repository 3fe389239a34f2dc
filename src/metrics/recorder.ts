/**
 * What sluice counts, independent of where it goes: the governor's events (grants, refusals) and
 * the gateway's own observations (refusals that never reach the governor, upstream overloads,
 * tokens, store errors, finished requests), recorded into any `MetricSink` (STYLE G10).
 *
 * Nothing here runs on the grant path unless this recorder listens: the governor builds event
 * payloads only for subscribers, and gauges are read from the snapshot at scrape time instead.
 */
import type { SluiceError } from "../core/errors.js";
import type { Governor } from "../governor/governor.js";
import {
  MetricIds,
  NO_KEY,
  NO_LANE,
  PRIORITY_LABELS,
  type RequestOutcome,
  type TokenKind,
  type UpstreamFailureCause,
} from "./names.js";
import type { MetricSink } from "./sink.js";

/** The part of a `Governor` the recorder subscribes to. */
export type GovernorEventSource = Pick<Governor, "onGrant" | "onRefusal">;

/** A refusal as the gateway knows it: a code (`"unauthorized"`) or the error it answered with. */
export type RefusalInput = string | Pick<SluiceError, "code">;

/** Options of {@link MetricsRecorder}. */
export interface MetricsRecorderOptions {
  /**
   * Lanes in shadow mode (`admission.mode: shadow`), all (`true`) or by a predicate on the lane.
   * There the governor's refusal events are not counted: nothing was refused, and the code that
   * lets the call through decides what enforce mode would have refused and calls `wouldRefuse`.
   * **Default:** `false` (every lane enforces).
   */
  shadow?: boolean | ((lane: string) => boolean);
  /**
   * Which lane names a governor event may use as a `lane` label; any other is recorded as `-`
   * (the gateway-wide admission bound's refusals name the bound, `gateway`, not a lane).
   * **Default:** every name.
   */
  isLane?: (lane: string) => boolean;
}

/** One request the gateway answered, as `request()` records it. */
export interface RequestRecord {
  /** The lane that served it (on fallback, the fallback), else the one asked for; undefined when unknown. */
  readonly lane: string | undefined;
  /** The client key's id (`auth.keys[].id`, `anonymous` in open mode); undefined when unauthenticated. */
  readonly key: string | undefined;
  /** The HTTP status answered. */
  readonly status: number;
  readonly outcome: RequestOutcome;
  /** From arrival to the last byte, queue wait included. */
  readonly seconds: number;
}

/** Subscribes to a governor's events and records what sluice counts into a sink. */
export class MetricsRecorder implements Disposable {
  readonly #sink: MetricSink;
  readonly #shadow: (lane: string) => boolean;
  readonly #isLane: (lane: string) => boolean;
  readonly #subscriptions: Disposable[];
  /** Refusal errors already counted (from `onRefusal` or a report), so none is counted twice. */
  readonly #counted = new WeakSet<object>();

  constructor(governor: GovernorEventSource, sink: MetricSink, options: MetricsRecorderOptions = {}) {
    this.#sink = sink;
    const shadow = options.shadow ?? false;
    this.#shadow = typeof shadow === "function" ? shadow : () => shadow;
    this.#isLane = options.isLane ?? (() => true);
    this.#subscriptions = [
      governor.onGrant((e) => {
        const priority = PRIORITY_LABELS[e.priority];
        sink.histogram(MetricIds.laneQueueWaitSeconds, { lane: e.lane, priority }, e.waitedMs / 1000);
      }),
      governor.onRefusal((e) => {
        // The queue really timed out, shadow mode or not: the lane's own counter says so.
        if (e.error.code === "queue_timeout")
          sink.counter(MetricIds.laneQueueTimeoutsTotal, { lane: e.lane });
        if (this.#shadow(e.lane)) return;
        this.#counted.add(e.error);
        const lane = this.#isLane(e.lane) ? e.lane : NO_LANE;
        sink.counter(MetricIds.refusalsTotal, { lane, reason: e.error.code });
      }),
    ];
  }

  /**
   * Counts a refusal the gateway answered. Pass the error itself whenever there is one: an error
   * the governor already reported through `onRefusal` (queue full, key limit, queue timeout,
   * `check()`) is skipped, and one it did not report (a shed waiter, `BreakerOpenError` from
   * `failFast`, `checkKey()`) is counted, so every refusal is counted exactly once. Pass a code
   * for refusals with no error object (`unauthorized`, `bad_request`, `body_too_large`, …).
   * `lane` is the lane refused, or undefined before it was known (recorded as `-`).
   */
  refusal(reason: RefusalInput, lane?: string): void {
    const code = this.#once(reason);
    if (code !== undefined)
      this.#sink.counter(MetricIds.refusalsTotal, { lane: lane ?? NO_LANE, reason: code });
  }

  /**
   * Shadow mode: counts a refusal enforce mode would have given and this call did not get. Like
   * `refusal`, an error object is counted once however often it is reported.
   */
  wouldRefuse(reason: RefusalInput, lane?: string): void {
    const code = this.#once(reason);
    if (code !== undefined)
      this.#sink.counter(MetricIds.wouldRefuseTotal, { lane: lane ?? NO_LANE, reason: code });
  }

  /**
   * An overload answer from `pod`, by its HTTP status (429, 502, 503, 504, 529). Connection
   * failures are `upstreamFailure`'s causes, not statuses.
   */
  upstreamOverload(pod: string, status: number): void {
    this.#sink.counter(MetricIds.upstreamOverloadsTotal, { pod, status: String(status) });
  }

  /**
   * One failed upstream attempt on `pod` (re-dispatched or not), by cause: connection `refused`,
   * `reset`, `timeout`, or an overload `status`.
   */
  upstreamFailure(pod: string, cause: UpstreamFailureCause): void {
    this.#sink.counter(MetricIds.upstreamFailuresTotal, { pod, cause });
  }

  /** One pod answer's time to first byte on `lane`, in ms. */
  upstreamTtfb(lane: string, ms: number): void {
    if (ms >= 0 && Number.isFinite(ms))
      this.#sink.histogram(MetricIds.upstreamTtfbSeconds, { lane }, ms / 1000);
  }

  /** Adds `n` tokens of `kind` used on `lane` (from upstream `usage`); ignores n ≤ 0 or NaN. */
  tokens(lane: string, kind: TokenKind, n: number): void {
    if (n > 0 && Number.isFinite(n)) this.#sink.counter(MetricIds.tokensTotal, { lane, kind }, n);
  }

  /** One failed fleet-store operation. */
  storeError(): void {
    this.#sink.counter(MetricIds.storeErrorsTotal, {});
  }

  /**
   * One request the gateway answered: `sluice_requests_total{lane,status}`, its duration by
   * outcome, and `sluice_key_requests_total{key,outcome}`. An unknown lane or key is `-`.
   */
  request(r: RequestRecord): void {
    const lane = r.lane ?? NO_LANE;
    const outcome = r.outcome;
    this.#sink.counter(MetricIds.requestsTotal, { lane, status: String(r.status) });
    if (r.seconds >= 0) this.#sink.histogram(MetricIds.requestDurationSeconds, { lane, outcome }, r.seconds);
    this.#sink.counter(MetricIds.keyRequestsTotal, { key: r.key ?? NO_KEY, outcome });
  }

  /** Stops listening to the governor. Idempotent. */
  close(): void {
    for (const s of this.#subscriptions.splice(0)) s[Symbol.dispose]();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  /** The code to count, or undefined for an error object already counted. */
  #once(reason: RefusalInput): string | undefined {
    if (typeof reason === "string") return reason;
    if (this.#counted.has(reason)) return undefined;
    this.#counted.add(reason);
    return reason.code;
  }
}
