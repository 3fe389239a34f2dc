/**
 * The admission bound (the first row of the budget table): across every lane, at most
 * `maxInflight` calls in flight, and at most `maxInflight + maxQueued` requests admitted and not
 * yet ended — whether they are still sending their body, waiting in a queue, or in flight. The
 * gateway's `admission.max_concurrency` / `max_queued`; a library may set it too.
 *
 * One budget with two limits: the in-flight part sits on every lane's path like any other budget
 * (it is a `ConcurrencyBudget` with no reserve, and takes and gives as one); the admitted part is
 * taken on arrival (`enter`) — before a request body is read, so a flood of uploads is refused
 * without reading them — and given back when the request ends (`leave`). Its refusal carries a Retry-After from the measured drain rate
 * (Little's law over all lanes), not a constant.
 */
import { type BudgetState, ConcurrencyBudget } from "./budget.js";
import { QueueFullError } from "./errors.js";
import { HoldTime, retryAfterMs } from "./retry-after.js";

export class AdmissionBudget extends ConcurrencyBudget {
  /** Requests admitted and not yet ended (in flight, waiting, or still sending their body). */
  entered = 0;
  /** How long calls hold their slot, over all lanes: the drain rate. */
  readonly hold = new HoldTime();

  constructor(
    name: string,
    maxInflight: number,
    /** Requests admitted beyond `maxInflight`: waiting, or still sending their body. */
    public maxQueued: number,
  ) {
    super(name, maxInflight);
  }

  /** Calls in flight at once across every lane: the budget's `limit`, under the option's name. */
  get maxInflight(): number {
    return this.limit;
  }

  set maxInflight(n: number) {
    this.limit = n;
  }

  /** Whether one more request fits now. */
  get full(): boolean {
    return this.entered >= this.maxInflight + this.maxQueued;
  }

  /** The refusal one more request gets now, or undefined when it fits. Counts nothing. */
  refusal(): QueueFullError | undefined {
    if (!this.full) return undefined;
    const queued = Math.max(0, this.entered - this.inflight);
    // A newcomer waits for everyone admitted beyond the in-flight slots, plus itself.
    const position = this.entered - this.maxInflight + 1;
    return new QueueFullError(
      this.name,
      this.inflight,
      queued,
      this.maxQueued,
      this.maxInflight,
      retryAfterMs(position, this.maxInflight, this.hold),
      "full",
    );
  }

  /** One more request admitted (after `refusal()` said it fits, or let through in shadow mode). */
  enter(): void {
    this.entered++;
  }

  /** An admitted request ended; returns true when none is left. */
  leave(): boolean {
    if (this.entered > 0) this.entered--;
    return this.entered === 0;
  }

  override toJSON(): BudgetState & { entered: number; maxQueued: number } {
    return {
      name: this.name,
      limit: this.maxInflight,
      inflight: this.inflight,
      entered: this.entered,
      maxQueued: this.maxQueued,
    };
  }
}
