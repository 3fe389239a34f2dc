/**
 * The promises of calls that wait: settling them when the scheduler grants or refuses, aborts
 * while they wait, re-dispatch, and — with a fleet store — confirming a grant with the fleet
 * before the caller gets its lease.
 *
 * With a fleet store the scheduler's pass still grants synchronously against this process's
 * mirror of the fleet; `settle` then asks the store to confirm. A refusal puts the waiter back in
 * line at its place (the store's mirror now knows the room is taken, so the next pass skips it
 * until a release somewhere frees it); a store that is down with the `closed` policy refuses the
 * call with its `StoreUnavailableError`. A call with a bounded key also has its key's slot taken
 * in the fleet when it arrives (`FleetStore.arrive`); a refusal there ends the call with it, before
 * its caller has a lease.
 */
import { channel } from "node:diagnostics_channel";
import type { Clock } from "../core/clock.js";
import type { Ticket } from "../core/lease.js";
import { classifyOutcome, type FailureInput } from "../core/outcome.js";
import { effectiveRank } from "../core/priority.js";
import type { Scheduler } from "../core/scheduler.js";
import { type FleetStore, isFleetStore, type Store } from "../core/store.js";
import type { WakeTimer } from "./timer.js";

const grantChannel = channel("sluice:lease:grant");

export class Waiters {
  /** Grants being confirmed with the fleet: they still wait (the fleet's waiter counts include them). */
  readonly confirmingNow = new Set<Ticket>();
  /** Every grant being confirmed: an arrival a pass granted is handed over twice, asked once. */
  readonly #asking = new Set<Ticket>();
  /** Arrivals whose key's slot the fleet is still asked for. */
  readonly #arriving = new Map<Ticket, Promise<void>>();
  /** The fleet refused a key's slot while the call's grant was being confirmed: ended at the answer. */
  readonly #keyRefused = new Map<Ticket, unknown>();

  /** The store when a fleet shares it (every grant is confirmed), else null (grants are final). */
  readonly fleet: FleetStore | null;

  constructor(
    readonly clock: Clock,
    readonly scheduler: Scheduler,
    readonly timer: WakeTimer,
    store: Store,
  ) {
    this.fleet = isFleetStore(store) ? store : null;
  }

  /** Whether every grant waits for the fleet to confirm it. */
  get confirming(): boolean {
    return this.fleet !== null;
  }

  /**
   * The scheduler granted `t`: with a fleet store confirm first, then hand the caller its lease.
   * `waited`: it was a waiter (not granted on arrival), so the fleet keeps counting it as waiting
   * until Redis confirms (the advertisement does not flap while a grant is asked).
   */
  granted(t: Ticket, waited = true): void {
    if (this.fleet === null) this.settle(t, undefined);
    else this.#confirm(this.fleet, t, waited);
  }

  /**
   * `acquire` admitted `t`, granted at once or queued. With a fleet store a bounded key's slot is
   * taken in the fleet too (the same round trip as a grant on arrival); if the fleet refuses it,
   * the call ends with that refusal.
   */
  arrived(t: Ticket, granted: boolean): void {
    const asked = t.key === null ? undefined : this.fleet?.arrive(t.key);
    if (asked !== undefined) {
      this.#arriving.set(t, asked);
      asked.then(
        () => this.#arriving.delete(t),
        (error: unknown) => {
          this.#arriving.delete(t);
          this.#refuseKey(t, error);
        },
      );
    }
    if (granted) this.granted(t, false);
    else this.fleet?.waitersChanged();
  }

  #refuseKey(t: Ticket, error: unknown): void {
    if (this.#asking.has(t)) {
      this.#keyRefused.set(t, error); // its grant is being confirmed: ended when that answers
      return;
    }
    const now = this.clock.now();
    if (!this.scheduler.cancel(t, now)) return; // it ended already
    this.settle(t, error);
    this.timer.arm(now);
  }

  /**
   * The fleet confirmed `t`'s grant: its caller gets the lease once its key's slot is taken too,
   * or the refusal (or its abort) with the slots given straight back.
   */
  #handOver(t: Ticket): void {
    const arriving = this.#arriving.get(t);
    if (arriving !== undefined) {
      this.#asking.add(t); // not handed over yet: a key refusal is kept for below
      const then = () => {
        this.#asking.delete(t);
        if (t.state === "granted") this.#handOver(t);
      };
      arriving.then(then, then);
      return;
    }
    const refusal = this.#keyRefused.get(t);
    this.#keyRefused.delete(t);
    const error = refusal ?? (t.abort?.signal.aborted ? t.abort.signal.reason : undefined);
    if (error !== undefined) {
      const now = this.clock.now();
      this.scheduler.end(t, null, now); // confirmed, then given straight back
      this.timer.arm(now);
    }
    this.settle(t, error);
  }

  /** Settles the caller's promise: the lease, or the refusal. */
  settle(t: Ticket, error: unknown): void {
    this.fleet?.waitersChanged(); // one waiter fewer (granted, refused, aborted, timed out)
    const hook = t.abort;
    if (hook !== null) {
      hook.detach?.();
      hook.detach = null;
    }
    const resolve = t.resolve;
    t.resolve = null;
    if (error === undefined) {
      // A ticket granted by its own admit pass has no resolver yet; acquire() publishes it.
      if (resolve !== null && grantChannel.hasSubscribers) grantChannel.publish(t);
      resolve?.(t);
    } else resolve?.(Promise.reject(error));
  }

  /** While `t` waits, an abort removes it and rejects with `signal.reason` (STYLE G9). */
  listenForAbort(t: Ticket, signal: AbortSignal): void {
    const onAbort = () => {
      if (this.scheduler.cancel(t, this.clock.now())) {
        this.settle(t, signal.reason);
        this.timer.arm();
      }
    };
    signal.addEventListener("abort", onAbort, { once: true });
    t.abort!.detach = () => signal.removeEventListener("abort", onAbort);
  }

  /** The caller released a re-dispatch that was waiting for a pod. */
  abandon(t: Ticket): void {
    if (!this.scheduler.cancel(t, this.clock.now())) return;
    this.settle(t, new Error(`lease on lane ${t.lane} was released while its re-dispatch waited for a pod`));
    this.timer.arm();
  }

  /** Re-dispatch after a refusal before the pod started the call. */
  retry(t: Ticket, failure: FailureInput | undefined): Promise<boolean> {
    const outcome = classifyOutcome(failure ?? { refused: true });
    // One reading of the clock for the re-dispatch and the re-arm: a cooldown or pause it starts
    // that ends between two readings would be seen by neither (issue 14).
    const now = this.clock.now();
    const result = this.scheduler.redispatch(t, outcome, now);
    if (result === "dispatched" && this.fleet !== null) return this.#confirmPod(this.fleet, t);
    if (result !== "queued") {
      this.timer.arm(now);
      return Promise.resolve(result === "dispatched");
    }
    const waiting = new Promise<boolean>((resolve) => {
      t.resolve = (granted) => resolve(Promise.resolve(granted).then(() => true));
    });
    const signal = t.abort?.signal;
    if (signal?.aborted) {
      if (this.scheduler.cancel(t, now)) this.settle(t, signal.reason);
    } else if (signal !== undefined) this.listenForAbort(t, signal);
    this.timer.arm(now);
    this.fleet?.waitersChanged();
    return waiting;
  }

  #confirm(fleet: FleetStore, t: Ticket, waited: boolean): void {
    // `admit` may grant an arrival in its own pass (the hook) and then report it granted: one ask.
    if (this.#asking.has(t)) return;
    this.#asking.add(t);
    const path = t.path!;
    const now = this.clock.now();
    // The effective class (aging included) decides whose waiters the fleet leaves room for.
    const effective = effectiveRank(t.rank, t.arrivedAt, now, t.laneRef.settings.agingMs);
    if (waited) {
      this.confirmingNow.add(t);
      fleet.waitersChanged(); // still waiting: counted until the fleet says yes
    }
    fleet.confirm(path, t.rank, 0, t.tokens, effective).then(
      (ok) => {
        this.#asking.delete(t);
        this.confirmingNow.delete(t);
        const now = this.clock.now();
        if (t.state !== "granted" || t.path !== path) return;
        const signal = t.abort?.signal;
        if (!ok) {
          this.scheduler.requeue(t, now);
          if (!waited) fleet.waitersChanged(); // an arrival refused by the fleet waits now
          // An abort while the fleet was asked found nothing to cancel (the ticket was granted):
          // honour it now, or the requeued waiter would outlive its caller.
          // A key refusal heard while the grant was asked ends it now, as an abort does.
          const refusal = this.#keyRefused.get(t) ?? (signal?.aborted ? signal.reason : undefined);
          this.#keyRefused.delete(t);
          if (refusal !== undefined && this.scheduler.cancel(t, now)) this.settle(t, refusal);
          this.timer.arm(now);
          return;
        }
        this.#handOver(t);
      },
      (error: unknown) => {
        this.#asking.delete(t);
        this.#keyRefused.delete(t);
        this.confirmingNow.delete(t);
        const now = this.clock.now();
        this.scheduler.requeue(t, now);
        this.scheduler.cancel(t, now);
        this.timer.arm(now);
        this.settle(t, error);
      },
    );
  }

  /** A re-dispatch took another pod locally: confirm the pod's part with the fleet. */
  async #confirmPod(fleet: FleetStore, t: Ticket): Promise<boolean> {
    const path = t.path!;
    let ok: boolean;
    try {
      ok = await fleet.confirm(path, t.rank, path.podStart, t.tokens);
    } catch {
      ok = false;
    }
    const now = this.clock.now();
    if (ok || t.state !== "granted") return ok && t.state === "granted";
    // The fleet has no room on that pod: the call ends here, its lane slot given back.
    this.scheduler.dropPod(t, now);
    this.scheduler.end(t, null, now);
    this.timer.arm(now);
    return false;
  }
}
