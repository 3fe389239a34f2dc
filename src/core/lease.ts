/**
 * A grant is a lease with exactly three endings (STYLE G3): `succeeded(usage)`, `failed(err)`
 * and `release()`. Each ends the lease; whichever comes first wins and later calls are no-ops,
 * so a slot is given back exactly once. The same object is the waiter while it queues, so one
 * acquire allocates one record.
 */
import type { ArrivalBudget } from "./budget.js";
import type { Flow } from "./fair-queue.js";
import type { Lane, LaneOwner } from "./lane.js";
import type { FailureInput } from "./outcome.js";
import type { Path } from "./path.js";
import type { GrantRecord, Pod } from "./pod.js";
import { PRIORITIES, type Priority, type Rank } from "./priority.js";
import type { QueueNode } from "./wait-queue.js";

/**
 * Actual usage reported at the end of a call: reconciles the token budgets (`tpm`) with the
 * estimate reserved at the grant (`acquire(lane, { tokens })`). `tokens` is the total; else
 * `promptTokens + completionTokens`.
 */
export interface Usage {
  tokens?: number;
  promptTokens?: number;
  completionTokens?: number;
}

/** Options of `lease.release()`. */
export interface ReleaseOptions {
  /**
   * `false`: the call never reached the provider (it was not sent), so its token and request
   * reservations are refunded. **Default:** `true` — without a verdict the call may have run, so
   * the estimate stays charged.
   */
  sent?: boolean;
}

/** The tokens a usage report counts, or undefined when it counts none. */
export function usageTokens(usage: Usage | undefined): number | undefined {
  if (usage === undefined || usage === null) return undefined;
  const n = (v: unknown): number | undefined =>
    typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined;
  const total = n(usage.tokens);
  if (total !== undefined) return total;
  const prompt = n(usage.promptTokens);
  const completion = n(usage.completionTokens);
  return prompt === undefined && completion === undefined ? undefined : (prompt ?? 0) + (completion ?? 0);
}

/** A held slot on every budget of a lane's path. */
export interface Lease extends Disposable, AsyncDisposable {
  /** The lane that granted it (the fallback lane when the first choice was tripped). */
  readonly lane: string;
  /** The pod to send this call to, for lanes served by pods. */
  readonly pod: string | undefined;
  /** The class the call was served as (after a key's `maxPriority` cap). */
  readonly priority: Priority;
  /** How long it waited in the queue, in ms; 0 when granted on arrival. */
  readonly queuedMs: number;
  /** Dispatch attempts so far (1 + re-dispatches). */
  readonly attempts: number;
  /**
   * The call worked: feeds the pod's (and account's) width and breaker, then releases. `usage`
   * reconciles the token budgets with the estimate reserved at the grant (refund or debt);
   * without it the estimate stays charged.
   */
  succeeded(usage?: Usage): void;
  /**
   * The call failed: an overload status or refusal narrows the pod, then releases. The estimate
   * stays charged (the provider may have counted it), except for `{ refused: true }`: the pod
   * never took the call, so its reservations are refunded.
   */
  failed(failure: FailureInput): void;
  /**
   * Releases without a verdict (idempotent); also gives up a re-dispatch still waiting for a pod.
   * The estimate stays charged unless `{ sent: false }` says the call never reached the provider.
   */
  release(options?: ReleaseOptions): void;
  /**
   * The pod refused before starting the call: re-dispatch to another pod keeping the arrival
   * time. Resolves true with `pod` updated, or false (lease released) when the per-call attempt
   * limit (3) or the lane's re-dispatch budget says no.
   */
  retry(failure?: FailureInput): Promise<boolean>;
}

/** Who a ticket reports its ending to: the Governor, which owns timers and promises. */
export type TicketOwner = LaneOwner<Ticket>;

/** A ticket waits, then holds a grant, then has ended; it never goes back. */
export type TicketState = "waiting" | "granted" | "ended";

/**
 * A call's dispatch to a pod: what AIMD and the breaker need back at its end. Allocated at the
 * first pod grant, so lanes without pods pay nothing for it.
 */
export class PodAttempt implements GrantRecord {
  inflightAtStart = 0;
  widthAtStart = 0;
  epoch = 0;
  probe = false;
  /** Dispatch attempts so far (1 + re-dispatches). */
  attempts = 1;
  /** Pods that refused this call before it started (re-dispatch avoids them). */
  refusedBy: Pod[] | null = null;

  /** null once this attempt's ending has been settled with the pod. */
  constructor(public pod: Pod | null) {}
}

/** The caller's AbortSignal and how to stop listening to it (only for calls that pass one). */
export interface AbortHook {
  readonly signal: AbortSignal;
  detach: (() => void) | null;
}

/**
 * What only some calls carry: a token estimate, what the call used, an account's record, the
 * caller's AbortSignal, the dispatch to a pod. Allocated on the first write that needs it, so a
 * call on a lane without pods, token budgets or accounts, passing no signal, pays nothing for
 * these — and a queued waiter carries one field for all of them.
 */
export class TicketExtras {
  tokens = 0;
  used: number | null | undefined = undefined;
  acct: GrantRecord | null = null;
  abort: AbortHook | null = null;
  dispatch: PodAttempt | null = null;
}

/**
 * A ticket's extras, made on first use. A function, not a private method: a class with private
 * methods stores a brand on every instance, one more word per waiter.
 */
function extrasOf(t: Ticket): TicketExtras {
  if (t.extras === null) t.extras = new TicketExtras();
  return t.extras;
}

/**
 * The waiter and then the lease. Kept small on purpose (12 fields): it is what a queue of
 * 100,000 waiters is made of. Pod, metering and abort state live in records only those calls
 * allocate (`extras`, and its `dispatch`); their accessors read as plain fields.
 */
export class Ticket implements Lease, QueueNode {
  /** Its entry's key while it waits in its lane's queue, 0 otherwise (`WaitQueue`). */
  queued = 0;
  enqueuedAt = 0;
  grantedAt = 0;
  state: TicketState = "waiting";
  /** The budgets this ticket holds while granted (its lane's part only while a re-dispatch waits). */
  path: Path | null = null;
  /**
   * Settles the caller's promise while the ticket waits: with the ticket itself when granted,
   * with a rejected promise when refused (one function instead of a resolve/reject pair).
   */
  resolve: ((value: Lease | PromiseLike<Lease>) => void) | null = null;
  /** Token estimate, usage, account record, abort hook, pod dispatch; null until one is set. */
  extras: TicketExtras | null = null;
  /**
   * Resolving a promise with an object first looks up `then` on it (a thenable is adopted), which
   * for a Ticket walked its prototype chain to Object.prototype at every grant. An own `then`
   * ends the lookup at once: +13 % queued acquires a second (`bench/profile.ts s`, three
   * interleaved pairs; the same on Ticket.prototype cost the uncontended pair ~10 %) for 8 bytes
   * a waiter. Undefined, not callable: a lease is still a value, never adopted as a thenable.
   */
  // biome-ignore lint/suspicious/noThenProperty: undefined, not callable: await and resolve treat a lease as a value (leases.test.ts).
  readonly then: undefined = undefined;

  constructor(
    readonly laneRef: Lane<Ticket>,
    public rank: Rank,
    readonly arrivedAt: number,
    readonly key: ArrivalBudget | null,
  ) {}

  /** The flow it shares its class by while it waits: its key's (or tenant's); null = anonymous. */
  get flow(): Flow | null {
    return this.key === null ? null : this.key.flow;
  }

  /** The call's token estimate: what its path's token buckets reserve at the grant (0 = none given). */
  get tokens(): number {
    return this.extras === null ? 0 : this.extras.tokens;
  }

  set tokens(n: number) {
    if (n !== 0 || this.extras !== null) extrasOf(this).tokens = n;
  }

  /**
   * What the call used, set by its ending: undefined keeps the estimate, null means it never
   * reached the provider (refund), a number is its real tokens (refund or debt).
   */
  get used(): number | null | undefined {
    return this.extras === null ? undefined : this.extras.used;
  }

  set used(v: number | null | undefined) {
    if (v !== undefined || this.extras !== null) extrasOf(this).used = v;
  }

  /** The account's record of this call (cap at the grant, epoch), for lanes with an adaptive account. */
  get acct(): GrantRecord | null {
    return this.extras === null ? null : this.extras.acct;
  }

  set acct(record: GrantRecord | null) {
    if (record !== null || this.extras !== null) extrasOf(this).acct = record;
  }

  /** The caller's AbortSignal while it waits, and how to stop listening to it. */
  get abort(): AbortHook | null {
    return this.extras === null ? null : this.extras.abort;
  }

  set abort(hook: AbortHook | null) {
    if (hook !== null || this.extras !== null) extrasOf(this).abort = hook;
  }

  /** The call's dispatch to a pod (lanes served by pods), from its first pod grant on. */
  get dispatch(): PodAttempt | null {
    return this.extras === null ? null : this.extras.dispatch;
  }

  set dispatch(d: PodAttempt | null) {
    if (d !== null || this.extras !== null) extrasOf(this).dispatch = d;
  }

  get owner(): TicketOwner {
    return this.laneRef.owner!;
  }

  get attempts(): number {
    return this.dispatch?.attempts ?? 1;
  }

  get lane(): string {
    return this.laneRef.name;
  }

  get pod(): string | undefined {
    return this.dispatch?.pod?.id;
  }

  get priority(): Priority {
    return PRIORITIES[this.rank]!;
  }

  get queuedMs(): number {
    return this.grantedAt - this.enqueuedAt;
  }

  succeeded(usage?: Usage): void {
    if (this.state !== "granted") return;
    this.used = usageTokens(usage);
    this.owner.end(this, undefined, true);
  }

  failed(failure: FailureInput): void {
    if (this.state !== "granted") return;
    // The pod refused the connection: the provider never saw the call.
    if (
      typeof failure === "object" &&
      failure !== null &&
      (failure as { refused?: unknown }).refused === true
    )
      this.used = null;
    this.owner.end(this, failure, true);
  }

  release(options?: ReleaseOptions): void {
    if (this.state === "granted") {
      if (options?.sent === false) this.used = null;
      this.owner.end(this, undefined, false);
    }
    // A re-dispatch waiting again for a pod: releasing gives the call up (its retry() rejects).
    else if (this.state === "waiting" && this.resolve !== null && this.attempts > 1) this.owner.abandon(this);
  }

  retry(failure?: FailureInput): Promise<boolean> {
    if (this.state !== "granted") return Promise.resolve(false);
    return this.owner.retry(this, failure);
  }

  [Symbol.dispose](): void {
    this.release();
  }

  [Symbol.asyncDispose](): Promise<void> {
    this.release();
    return Promise.resolve();
  }
}

/**
 * One record of each per-call class, alive for the life of the process. V8 keeps a class's
 * instance shapes (maps) alive only through live instances, and optimized code that checks a
 * shape is thrown away when it dies. With no call in flight at a full collection — an idle
 * gateway, or the `gc()` before each benchmark run — every Ticket shape died and with it the
 * optimized acquire and release paths (`--trace-deopt`: 10–30 functions marked "weak objects",
 * 0–1 with these kept), so the next thousands of calls ran unoptimized until V8 compiled them
 * again (`bench/idle-deopt.ts`). Built by the same constructors, so they hold the same shapes.
 * Exported only so the binding is kept: nothing reads it.
 */
export const SHAPE_ANCHORS = [
  new Ticket(undefined as unknown as Lane<Ticket>, 1, 0, null),
  new TicketExtras(),
  new PodAttempt(null),
] as const;
