/**
 * What a fleet store tells a Governor and asks of it, wired in one place. The memory store has
 * none of these hooks (it is not a `FleetStore`); a Redis store has them all:
 *
 * - answers read from Redis land on the Governor's clock (`useClock`);
 * - pods' adaptive state is shared: a width or breaker change here is published, and one heard
 *   from another replica (a cut, a breaker) is adopted, then the waiters are looked at again;
 * - this process's waiters are advertised, so other processes leave room for better ones;
 * - room freed by other processes wakes this one's waiters;
 * - the pods' kept state is read when the store first meets them.
 */
import type { Clock } from "../core/clock.js";
import type { Pod } from "../core/pod.js";
import type { Scheduler } from "../core/scheduler.js";
import { isFleetStore, type Store } from "../core/store.js";
import { waitingByLane } from "../core/waiting-by-lane.js";
import type { Registry } from "./registry.js";
import type { WakeTimer } from "./timer.js";
import type { Waiters } from "./waiters.js";

/** The Governor's parts the hooks read. */
export interface FleetHookParts {
  readonly store: Store;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly timer: WakeTimer;
  readonly waiters: Waiters;
  readonly registry: Registry;
}

/** What the Governor tells a fleet store itself: a pod's breaker changed. */
export interface FleetHooks {
  /** Publishes `pod`'s adaptive state (its breaker moved) to the other processes. */
  sharePod(pod: Pod): void;
}

/**
 * Connects a fleet store's hooks to the Governor's parts, once its registry is built. Null for
 * any other store: nothing to wire, and the Governor has nothing to tell it.
 */
export function wireFleetHooks(p: FleetHookParts): FleetHooks | null {
  const { store, clock, scheduler, timer, registry } = p;
  if (!isFleetStore(store)) return null;
  store.useClock(clock);
  // Something changed elsewhere in the fleet: look at the waiters again now.
  const lookAgain = (): void => {
    const now = clock.now();
    scheduler.tick(now);
    timer.arm(now);
  };
  const sharePod = (pod: Pod): void => store.sharePod(pod.id, pod.shared(clock.now()));
  scheduler.onWidthChange.event((e) => {
    const pod = registry.pods.get(e.pod);
    if (pod !== undefined) sharePod(pod);
  });
  store.onPodState(({ id, state }) => {
    registry.pods.get(id)?.adopt(state, clock.now());
    lookAgain();
  });
  store.watchWaiters(() => waitingByLane(registry.lanes.values(), p.waiters.confirmingNow, clock.now()));
  store.onChange(lookAgain);
  // A fleet store reads the pods' kept state (a cut, an open breaker) when it first meets them.
  store.watchPods(() => registry.pods.keys());
  return { sharePod };
}
