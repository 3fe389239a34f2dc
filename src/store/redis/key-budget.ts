/**
 * A key's bound (in flight + queued) as a fleet store keeps it: the local counts, plus what the
 * other replicas hold on the key as this replica last heard from Redis (`others`), so the
 * synchronous checks — the scheduler's admission and the gateway's pre-body `checkKey` — refuse
 * at once what the fleet has no room for. Redis takes the slot itself when the call arrives
 * (`FleetKeys`); this is the fast first refusal.
 */
import { ArrivalBudget } from "../../core/budget.js";

export class FleetKeyBudget extends ArrivalBudget {
  /** Calls the other replicas hold on the key (in flight + queued), as last heard. */
  others = 0;

  override get elsewhere(): number {
    return this.others;
  }
}
