/**
 * What a fleet store tells a Governor and asks of it, wired in one place. The memory store has
 * none of these hooks (they are optional members of `Store`); a Redis store has them all:
 *
 * - pods' adaptive state is shared: a width change here is published, and one heard from another
 *   replica (a cut, a breaker) is adopted, then the waiters are looked at again;
 * - this process's waiters are advertised, so other processes leave room for better ones;
 * - room freed by other processes wakes this one's waiters;
 * - the pods' kept state is read when the store first meets them.
 */
import type { Clock } from "../core/clock.js";
import type { Scheduler } from "../core/scheduler.js";
import type { Store } from "../core/store.js";
import { waitingByLane } from "../store/redis/waiters.js";
import type { Registry } from "./registry.js";
import type { WakeTimer } from "./timer.js";
import type { Waiters } from "./waiters.js";

/** The Governor's parts the hooks read; `registry` is read lazily (it is built after the hooks). */
export interface FleetHookParts {
  readonly store: Store;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly timer: WakeTimer;
  readonly waiters: Waiters;
  readonly registry: () => Registry;
}

/** Connects a fleet store's hooks to the Governor's parts (a no-op for the memory store). */
export function wireFleetHooks(p: FleetHookParts): void {
  const { store, clock, scheduler, timer } = p;
  // Something changed elsewhere in the fleet: look at the waiters again now.
  const lookAgain = (): void => {
    const now = clock.now();
    scheduler.tick(now);
    timer.arm(now);
  };
  const share = store.sharePod?.bind(store);
  if (share !== undefined)
    scheduler.onWidthChange.event((e) => {
      const pod = p.registry().pods.get(e.pod);
      if (pod !== undefined) share(pod.id, pod.shared(clock.now()));
    });
  store.onPodState?.(({ id, state }) => {
    p.registry().pods.get(id)?.adopt(state, clock.now());
    lookAgain();
  });
  store.watchWaiters?.(() =>
    waitingByLane(p.registry().lanes.values(), p.waiters.confirmingNow, clock.now()),
  );
  store.onChange?.(lookAgain);
}
