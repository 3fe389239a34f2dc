/**
 * A provider account as the provider sees it (DESIGN §1 table, seed 004): several lanes (models)
 * that share one meter. One budget on each of their paths, with room only when all of these do:
 *
 * - its calls in flight, under a cap that adapts like a pod's width (AIMD, `aimd.ts`): cut when
 *   the provider throttles, grown back on success — per account, not per pod, because the
 *   provider meters the account;
 * - its `tpm` and `rpm` token buckets (`rate-budget.ts`), reserved at the grant and reconciled
 *   with real usage at the end;
 * - its quota pause: a 429 with `Retry-After` or a rate-limit reset from any pod of the account
 *   pauses the whole account until the reset (capped at `maxQuotaPauseMs`), not just that pod.
 *
 * It also keeps what seed 004 says to watch: throttled answers in the last minute, and (in the
 * snapshot) their ratio to the calls in flight.
 */
import { AimdWidth, FixedWidth, type WidthAlgorithm, type WidthState } from "./aimd.js";
import type { Budget, BudgetState } from "./budget.js";
import { DEFAULT_SHARE_ABOVE, type ResolvedShares, shareTable } from "./class-shares.js";
import { Emitter, type Event } from "./events.js";
import { MinuteCounter } from "./minute-counter.js";
import type { Outcome } from "./outcome.js";
import type { GrantRecord } from "./pod.js";
import type { Rank } from "./priority.js";
import { RateBudget, type RateState } from "./rate-budget.js";

/** An account's settings, every default applied. */
export interface AccountSettings {
  /** Calls in flight across the account's lanes; undefined = no concurrency bound. */
  maxInflight: number | undefined;
  /** Tokens per minute; undefined = none. */
  tpm: number | undefined;
  /** Requests per minute; undefined = none. */
  rpm: number | undefined;
  /** Tokens of the `tpm` bucket only interactive calls may take (0 without `tpm`). */
  tpmReserve: number;
  /** Requests of the `rpm` bucket only interactive calls may take (0 without `rpm`). */
  rpmReserve: number;
  /** Shares of the buckets by class past `shareAbove` of them spent (`class-shares.ts`); none when absent. */
  tpmShares?: ResolvedShares | undefined;
  rpmShares?: ResolvedShares | undefined;
  shareAbove?: number | undefined;
  /** AIMD on the in-flight cap (needs `maxInflight`); false keeps it at `maxInflight`. */
  adaptive: { floor: number } | false;
  /** Longest one quota signal pauses the account. */
  maxQuotaPauseMs: number;
}

/** An account's state as plain data. */
export interface AccountState extends BudgetState {
  quotaUntil: number;
  width: number;
  tokens: RateState | null;
  requests: RateState | null;
}

/**
 * What a fleet's processes share of an account's adaptive state: its cap (AIMD) and its quota
 * pause, as time left when it was shared (each process has its own clock).
 */
export interface SharedAccountState {
  width: WidthState;
  quotaLeftMs: number;
}

export class AccountBudget implements Budget {
  /** Calls this process holds. */
  inflight = 0;
  /** Calls other processes hold, as a fleet store last saw them (0 with the memory store). */
  others = 0;
  /** The provider's quota pause: no grant before this time. */
  quotaUntil = 0;
  /** The adaptive in-flight cap (`Infinity` without `maxInflight`). */
  width: WidthAlgorithm;
  tokens: RateBudget | null;
  requests: RateBudget | null;
  settings: AccountSettings;
  /** Answers that said slow down (429 with or without a reset, 503, 529), over the last minute. */
  readonly throttled = new MinuteCounter();
  readonly #shares = new Emitter<SharedAccountState>();
  /**
   * The cap moved or the quota pause grew here (a throttled or quota answer, a success that grew
   * the cap): what a fleet store tells the other processes. Opt-in: nothing is built unheard.
   */
  readonly onShare: Event<SharedAccountState> = this.#shares.event;

  constructor(
    readonly name: string,
    settings: AccountSettings,
    nowMs = 0,
  ) {
    this.settings = settings;
    this.width = widthOf(settings);
    this.tokens = rebucket(null, name, "tokens", settings.tpm, settings.tpmReserve, nowMs);
    this.requests = rebucket(null, name, "requests", settings.rpm, settings.rpmReserve, nowMs);
    this.#classShares(settings, nowMs);
  }

  /**
   * New settings on a live account (a reload): calls in flight keep their slots, bucket levels
   * and debt are kept (capped at a lower capacity), a pause runs its course, and an adaptive cap
   * keeps what it learned, capped at a lower `maxInflight`.
   */
  reconfigure(settings: AccountSettings, nowMs: number): void {
    const old = this.width;
    this.width =
      settings.adaptive !== false && old instanceof AimdWidth && settings.maxInflight !== undefined
        ? AimdWidth.fromJSON({
            ...old.toJSON(),
            ceiling: settings.maxInflight,
            floor: Math.min(settings.adaptive.floor, settings.maxInflight),
            width: Math.max(
              Math.min(settings.adaptive.floor, settings.maxInflight),
              Math.min(old.width, settings.maxInflight),
            ),
          })
        : widthOf(settings);
    this.tokens = rebucket(this.tokens, this.name, "tokens", settings.tpm, settings.tpmReserve, nowMs);
    this.requests = rebucket(this.requests, this.name, "requests", settings.rpm, settings.rpmReserve, nowMs);
    this.#classShares(settings, nowMs);
    this.settings = settings;
  }

  hasRoom(rank: Rank, cost: number, nowMs: number): boolean {
    return (
      this.inflight + this.others < this.width.width &&
      this.quotaUntil <= nowMs &&
      (this.tokens === null || this.tokens.hasRoom(rank, cost, nowMs)) &&
      (this.requests === null || this.requests.hasRoom(rank, cost, nowMs))
    );
  }

  take(cost: number, nowMs: number, rank?: Rank): void {
    this.inflight++;
    this.tokens?.take(cost, nowMs, rank);
    this.requests?.take(cost, nowMs, rank);
  }

  /** The buckets' class shares from `settings` (none when not given). */
  #classShares(settings: AccountSettings, nowMs: number): void {
    const above = settings.shareAbove ?? DEFAULT_SHARE_ABOVE;
    const table = (s: ResolvedShares | undefined) => (s === undefined ? null : shareTable(s));
    this.tokens?.setShares(table(settings.tpmShares), above, nowMs);
    this.requests?.setShares(table(settings.rpmShares), above, nowMs);
  }

  /** The in-flight slot back; the buckets are settled by {@link reconcile}. */
  give(): void {
    if (this.inflight > 0) this.inflight--;
  }

  reconcile(reserved: number, used: number | null, nowMs: number, grantedAtMs: number): void {
    this.tokens?.reconcile(reserved, used, nowMs, grantedAtMs);
    this.requests?.reconcile(reserved, used, nowMs, grantedAtMs);
  }

  /** When a call of estimate `cost` and own class `rank` could fit by itself: the pause ends, or the buckets refill. */
  nextChangeAt(nowMs: number, cost: number, rank: Rank): number | undefined {
    let at = this.quotaUntil > nowMs ? this.quotaUntil : undefined;
    for (const b of [this.tokens, this.requests]) {
      const change = b?.nextChangeAt(nowMs, cost, rank);
      if (change !== undefined && (at === undefined || change > at)) at = change;
    }
    // Room needs every part: the latest of the pause and the refills (none of them waits on the others).
    return at;
  }

  /** What a call granted now records, so its outcome can move the cap. */
  record(into: GrantRecord): GrantRecord {
    into.inflightAtStart = this.inflight;
    into.widthAtStart = this.width.width;
    into.epoch = this.width.epoch;
    into.probe = false;
    return into;
  }

  /**
   * One upstream answer on a lane of this account. Throttling cuts the cap (once per event, as a
   * pod's width); a quota signal pauses the account until the reset, capped, with no cut (DESIGN
   * §1.3: a quota is not congestion); a success grows the cap back. Returns whether the cap moved.
   */
  settle(outcome: Outcome, grant: GrantRecord, nowMs: number): boolean {
    const before = this.width.width;
    const pausedBefore = this.quotaUntil;
    switch (outcome.kind) {
      case "success":
        this.width.onSuccess(grant.inflightAtStart, grant.widthAtStart, grant.epoch);
        break;
      case "congestion":
        this.throttled.add(1, nowMs);
        // The provider saw the fleet's calls, not this process's: halve from what the fleet holds.
        this.width.onCongestion(grant.epoch, this.inflight + this.others);
        break;
      case "quota":
        this.throttled.add(1, nowMs);
        // Capped: a provider's `Retry-After: 99999999` must not park the account for years.
        this.quotaUntil = Math.max(
          this.quotaUntil,
          nowMs + Math.min(outcome.resetMs, this.settings.maxQuotaPauseMs),
        );
        break;
      default:
        break;
    }
    const moved = this.width.width !== before;
    if ((moved || this.quotaUntil > pausedBefore) && this.#shares.size > 0)
      this.#shares.emit(this.shared(nowMs));
    return moved;
  }

  /** The adaptive state other processes of a fleet take on (`adopt`). */
  shared(nowMs: number): SharedAccountState {
    return { width: this.width.toJSON(), quotaLeftMs: Math.max(0, this.quotaUntil - nowMs) };
  }

  /**
   * Takes on what another process saw: its cap (when both run AIMD under the same ceiling) and its
   * quota pause (the longer pause wins). Calls in flight keep their slots.
   */
  adopt(state: SharedAccountState, nowMs: number): void {
    if (this.width instanceof AimdWidth && state.width.ceiling === this.width.toJSON().ceiling)
      this.width = AimdWidth.fromJSON(state.width);
    this.quotaUntil = Math.max(this.quotaUntil, nowMs + state.quotaLeftMs);
  }

  toJSON(): AccountState {
    return {
      name: this.name,
      limit: this.settings.maxInflight ?? Number.POSITIVE_INFINITY,
      inflight: this.inflight,
      quotaUntil: this.quotaUntil,
      width: this.width.width,
      tokens: this.tokens?.toJSON() ?? null,
      requests: this.requests?.toJSON() ?? null,
    };
  }
}

function widthOf(s: AccountSettings): WidthAlgorithm {
  if (s.maxInflight === undefined) return new FixedWidth(Number.POSITIVE_INFINITY);
  return s.adaptive === false
    ? new FixedWidth(s.maxInflight)
    : new AimdWidth({ ceiling: s.maxInflight, floor: s.adaptive.floor });
}

function rebucket(
  b: RateBudget | null,
  name: string,
  unit: "tokens" | "requests",
  perMinute: number | undefined,
  reserve: number,
  nowMs: number,
): RateBudget | null {
  if (perMinute === undefined) return null;
  if (b === null) return new RateBudget(name, unit, perMinute, nowMs, reserve);
  b.reconfigure(perMinute, nowMs, reserve);
  return b;
}
