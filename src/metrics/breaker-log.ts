/**
 * Every breaker transition becomes one `warn` line (issue 8: a dead pod used to produce no log
 * line at any level). A transition is rare — a trip, a half-open probe, a recovery — so the
 * line can afford the pod's row of the snapshot: every lane that lists the pod, the cooldown an
 * opening chose and the trip count.
 */
import type { PodSnapshot } from "../core/snapshot.js";
import type { Governor } from "../governor/governor.js";

/** The part of a logger this needs (pino's `Logger` fits). */
export interface WarnLogger {
  warn(fields: object, message: string): void;
}

/** One transition as logged. */
export interface BreakerLogLine {
  pod: string;
  /** Every lane that lists the pod (one URL is one pod, shared by its lanes). */
  lanes: string[];
  from: string;
  to: string;
  /** Seconds until the probe is allowed, chosen by this opening (jittered backoff); 0 otherwise. */
  cooldown_s: number;
  /** Consecutive openings without a recovery; 0 once closed. */
  trips: number;
}

/**
 * Logs `governor`'s breaker transitions at `warn` as `breaker <from> → <to>`, with the fields of
 * {@link BreakerLogLine}. Dispose the result to stop.
 */
export function logBreakerChanges(
  governor: Pick<Governor, "onBreakerChange" | "snapshot">,
  log: WarnLogger,
): Disposable {
  return governor.onBreakerChange((e) => {
    const pod = podOf(governor, e.pod);
    const line: BreakerLogLine = {
      pod: e.pod,
      lanes: pod?.lanes ?? [e.lane],
      from: e.from,
      to: e.to,
      cooldown_s: e.to === "open" ? (pod?.reopens_in_s ?? 0) : 0,
      trips: pod?.trips ?? 0,
    };
    log.warn(line, `breaker ${e.from} → ${e.to}`);
  });
}

/**
 * The pod's row of the snapshot. The event is emitted after the breaker took its new state, so
 * the row shows it. A snapshot that fails (mid-reconfigure) costs the line its extra fields, not
 * the process: the emitter rethrows a listener's error where nothing catches it.
 */
function podOf(governor: Pick<Governor, "snapshot">, id: string): PodSnapshot | undefined {
  try {
    return governor.snapshot().pods.find((p) => p.id === id);
  } catch {
    return undefined;
  }
}
