/**
 * The options of the rate budgets and accounts (DESIGN §1 table, seed 004), validated once like
 * every other option (`options.ts`): a lane's own `tpm` / `rpm`, and provider accounts that group
 * lanes under one in-flight cap (adaptive), one `tpm`, one `rpm` and one quota pause.
 *
 * Each bucket keeps an interactive reserve (DESIGN §1.1, `rate-budget.ts`). By default it is the
 * share of the bucket that the lane's `reserve` is of its `limit` — a lane that keeps 1 of 8 slots
 * for interactive callers keeps 1/8 of its tokens and requests for them too, so one number states
 * the lane's promise and a bulk flood cannot spend it by draining tokens instead of slots. An
 * account serves several lanes: it keeps the largest share among them, so every lane's interactive
 * callers find their share there (the smallest would let one lane's bulk work drain the others').
 * `tpmReserve` / `rpmReserve` set it in tokens / requests instead.
 */
import type { AccountSettings } from "./account.js";
import { type ClassShareOptions, DEFAULT_SHARE_ABOVE, type ResolvedShares } from "./class-shares.js";
import { DEFAULTS } from "./defaults.js";
import { check, isInt, isNum, knownKeys } from "./validate.js";

/**
 * The interactive reserve of a bucket, where it is written: tokens (or requests) of it that only
 * calls whose own class is interactive may take. Clamped to the capacity − 1 (every class keeps
 * some of the bucket, as `reserve` keeps a slot). **Default:** the lane's reserve share (see above).
 */
interface RateReserveOptions {
  /** Tokens of the `tpm` bucket only interactive calls may take. **Default:** ⌊tpm × share⌋. */
  tpmReserve?: number;
  /** Requests of the `rpm` bucket only interactive calls may take. **Default:** ⌊rpm × share⌋. */
  rpmReserve?: number;
}

/**
 * Shares of a bucket by class, work-conserving: while a take leaves more than `1 − shareAbove`
 * of the bucket any class takes idle tokens; past that each class is held to its share against
 * the classes that wait. Memory store only (a fleet store refuses them).
 */
interface RateShareOptions {
  /** Shares of the `tpm` bucket by class. **Default:** none (the interactive reserve only). */
  tpmShares?: ClassShareOptions;
  /** Shares of the `rpm` bucket by class. **Default:** none. */
  rpmShares?: ClassShareOptions;
  /** The fraction of a bucket spent past which shares hold, in (0, 1]. **Default:** `0.8`. */
  shareAbove?: number;
}

/** A lane's rate options (part of `LaneOptions`). */
export interface LaneRateOptions extends RateReserveOptions, RateShareOptions {
  /** Tokens per minute for this lane (a token bucket, reserved at the grant from `acquire`'s `tokens`). **Default:** none. */
  tpm?: number;
  /** Requests per minute for this lane. **Default:** none. */
  rpm?: number;
  /** The provider account (a key of `accounts`) whose budgets this lane's calls also count against. */
  account?: string;
}

/** A lane's and an account's bucket option names: the buckets, their reserves and class shares. */
const BUCKET_KEYS = [
  "tpm",
  "rpm",
  "tpmReserve",
  "rpmReserve",
  "tpmShares",
  "rpmShares",
  "shareAbove",
] as const;

/** The lane's rate option names (validated with the other lane keys). */
export const LANE_RATE_KEYS = [...BUCKET_KEYS, "account"] as const;

/** A lane's rate options resolved: only those given, reserves applied (a lane without them resolves as before). */
export interface ResolvedLaneRates {
  /** The lane's own token and request budgets; undefined = none. */
  tpm?: number | undefined;
  rpm?: number | undefined;
  /** Their interactive reserves (present with their bucket). */
  tpmReserve?: number | undefined;
  rpmReserve?: number | undefined;
  /** The account it belongs to (a key of `accounts`). */
  account?: string | undefined;
  /** Shares of its buckets by class, and their threshold (present with their bucket). */
  tpmShares?: ResolvedShares | undefined;
  rpmShares?: ResolvedShares | undefined;
  shareAbove?: number | undefined;
}

/** A provider account shared by several lanes (`LaneOptions.account` names it). */
export interface AccountOptions extends RateReserveOptions, RateShareOptions {
  /** Calls in flight across the account's lanes. **Default:** no bound (then `tpm` or `rpm` must be set). */
  maxInflight?: number;
  /** Tokens per minute across the account (a token bucket: capacity one minute's worth). **Default:** none. */
  tpm?: number;
  /** Requests per minute across the account. **Default:** none. */
  rpm?: number;
  /**
   * AIMD on the in-flight cap, per account: cut when the provider throttles, grown on success.
   * `false` keeps the cap at `maxInflight`. **Default:** `{ floor: 4 }` (with `maxInflight`).
   */
  adaptive?: { floor?: number } | false;
  /** Longest one quota signal (a 429 with a reset) pauses the whole account. **Default:** 60 000 ms. */
  maxQuotaPauseMs?: number;
}

/** An account with every default applied. */
export type ResolvedAccount = AccountSettings;

const ACCOUNT_KEYS = ["maxInflight", ...BUCKET_KEYS, "adaptive", "maxQuotaPauseMs"] as const;

/** A rate: a whole number ≥ 1 per minute, or undefined. */
export function checkRate(v: unknown, path: string): number | undefined {
  if (v === undefined) return undefined;
  check(isInt(v, 1), path, "a whole number ≥ 1 per minute", v);
  return v as number;
}

/** What a lane keeps for interactive callers, as a share of its in-flight limit (0 for a pass-through lane). */
export function reserveShare(reserve: number, limit: number): number {
  return limit > 0 ? reserve / limit : 0;
}

/** The reserve rule of a bucket: at most capacity − 1, so every class keeps some of it. */
export function clampRateReserve(reserve: number, perMinute: number): number {
  return Math.min(reserve, perMinute - 1);
}

/** A bucket's interactive reserve before clamping: the one written, else `share` of its capacity (whole units). */
export function rateReserve(perMinute: number, written: number | undefined, share: number): number {
  return written ?? Math.floor(perMinute * share);
}

/** A written reserve: a whole number ≥ 0, and only beside the bucket it keeps part of. */
function checkReserve(v: unknown, perMinute: number | undefined, path: string, bucket: string): void {
  if (v === undefined) return;
  check(isInt(v, 0), path, `a whole number ≥ 0 of ${bucket === "tpm" ? "tokens" : "requests"}`, v);
  check(perMinute !== undefined, path, `set only with ${bucket} (it keeps part of that bucket)`, v);
}

/** Validates a share table (`ClassShareOptions`): known classes, each in [0, 1], together 1. */
function checkShares(
  v: unknown,
  perMinute: number | undefined,
  path: string,
  bucket: string,
): ResolvedShares | undefined {
  if (v === undefined) return undefined;
  check(
    typeof v === "object" && v !== null && !Array.isArray(v),
    path,
    "an object of class shares { interactive, default, bulk }",
    v,
  );
  knownKeys(v as object, ["interactive", "default", "bulk"], path);
  const o = v as ClassShareOptions;
  const shares: ResolvedShares = {
    interactive: o.interactive ?? 0,
    default: o.default ?? 0,
    bulk: o.bulk ?? 0,
  };
  for (const k of ["interactive", "default", "bulk"] as const)
    check(isNum(shares[k], 0) && shares[k] <= 1, `${path}.${k}`, "a share from 0 to 1", o[k]);
  const sum = shares.interactive + shares.default + shares.bulk;
  check(Math.abs(sum - 1) < 1e-9, path, "shares that add up to 1", v);
  check(perMinute !== undefined, path, `set only with ${bucket} (they share that bucket)`, v);
  return shares;
}

/** `shareAbove`: in (0, 1], only beside shares; the default when they are given. */
function checkShareAbove(v: unknown, shared: boolean, path: string): number | undefined {
  if (v !== undefined) {
    check(isNum(v, 0) && (v as number) > 0 && (v as number) <= 1, path, "a fraction in (0, 1]", v);
    check(shared, path, "set only with tpmShares or rpmShares (it is their threshold)", v);
  }
  return shared ? ((v as number | undefined) ?? DEFAULT_SHARE_ABOVE) : undefined;
}

/** A bucket's shares and their threshold, validated, as resolved fields (none when not given). */
export function resolveShares(
  o: RateShareOptions,
  tpm: number | undefined,
  rpm: number | undefined,
  path: string,
): { tpmShares?: ResolvedShares; rpmShares?: ResolvedShares; shareAbove?: number } {
  const tpmShares = checkShares(o.tpmShares, tpm, `${path}.tpmShares`, "tpm");
  const rpmShares = checkShares(o.rpmShares, rpm, `${path}.rpmShares`, "rpm");
  const shareAbove = checkShareAbove(
    o.shareAbove,
    tpmShares !== undefined || rpmShares !== undefined,
    `${path}.shareAbove`,
  );
  return {
    ...(tpmShares === undefined ? {} : { tpmShares }),
    ...(rpmShares === undefined ? {} : { rpmShares }),
    ...(shareAbove === undefined ? {} : { shareAbove }),
  };
}

/** A lane's `tpm`, `rpm`, their reserves (default: `share` of each) and `account`, only those given. */
export function resolveLaneRates(o: LaneRateOptions, path: string, share: number): ResolvedLaneRates {
  const tpm = checkRate(o.tpm, `${path}.tpm`);
  const rpm = checkRate(o.rpm, `${path}.rpm`);
  checkReserve(o.tpmReserve, tpm, `${path}.tpmReserve`, "tpm");
  checkReserve(o.rpmReserve, rpm, `${path}.rpmReserve`, "rpm");
  return {
    ...(tpm === undefined
      ? {}
      : { tpm, tpmReserve: clampRateReserve(rateReserve(tpm, o.tpmReserve, share), tpm) }),
    ...(rpm === undefined
      ? {}
      : { rpm, rpmReserve: clampRateReserve(rateReserve(rpm, o.rpmReserve, share), rpm) }),
    ...(o.account === undefined ? {} : { account: o.account }),
    ...resolveShares(o, tpm, rpm, path),
  };
}

/**
 * The default reserve share of each account: the largest among the lanes that join it (see the
 * top of this file), 0 for an account no lane with a reserve joins.
 */
export function accountShares(
  lanes: Readonly<Record<string, { account?: string | undefined; reserve: number; limit: number }>>,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const lane of Object.values(lanes)) {
    if (lane.account === undefined) continue;
    const share = reserveShare(lane.reserve, lane.limit);
    out.set(lane.account, Math.max(out.get(lane.account) ?? 0, share));
  }
  return out;
}

/** Validates `accounts` and applies the defaults; `shares` holds each account's default reserve share. */
export function resolveAccounts(
  accounts: Readonly<Record<string, AccountOptions>> | undefined,
  shares: ReadonlyMap<string, number> = new Map(),
): Record<string, ResolvedAccount> {
  const out: Record<string, ResolvedAccount> = {};
  for (const [name, a] of Object.entries(accounts ?? {})) {
    const path = `accounts.${name}`;
    check(typeof a === "object" && a !== null, path, "an object", a);
    knownKeys(a, ACCOUNT_KEYS, path);
    if (a.maxInflight !== undefined)
      check(isInt(a.maxInflight, 1), `${path}.maxInflight`, "an integer ≥ 1", a.maxInflight);
    const tpm = checkRate(a.tpm, `${path}.tpm`);
    const rpm = checkRate(a.rpm, `${path}.rpm`);
    checkReserve(a.tpmReserve, tpm, `${path}.tpmReserve`, "tpm");
    checkReserve(a.rpmReserve, rpm, `${path}.rpmReserve`, "rpm");
    const share = shares.get(name) ?? 0;
    check(
      a.maxInflight !== undefined || tpm !== undefined || rpm !== undefined,
      path,
      "at least one of maxInflight, tpm, rpm (an account with none bounds nothing)",
      a,
    );
    let adaptive: ResolvedAccount["adaptive"] =
      a.maxInflight === undefined ? false : { floor: DEFAULTS.adaptive.floor };
    if (a.adaptive === false) adaptive = false;
    else if (a.adaptive !== undefined) {
      check(
        typeof a.adaptive === "object" && a.adaptive !== null,
        `${path}.adaptive`,
        "false or an object",
        a.adaptive,
      );
      knownKeys(a.adaptive, ["floor"], `${path}.adaptive`);
      check(
        a.maxInflight !== undefined,
        `${path}.adaptive`,
        "false without maxInflight (it adapts that cap)",
        a.adaptive,
      );
      const floor = a.adaptive.floor ?? DEFAULTS.adaptive.floor;
      check(isInt(floor, 1), `${path}.adaptive.floor`, "an integer ≥ 1", floor);
      adaptive = { floor };
    }
    const maxQuotaPauseMs = a.maxQuotaPauseMs ?? DEFAULTS.quota.maxPauseMs;
    check(isNum(maxQuotaPauseMs, 0), `${path}.maxQuotaPauseMs`, "a number of ms ≥ 0", maxQuotaPauseMs);
    out[name] = {
      maxInflight: a.maxInflight,
      tpm,
      rpm,
      tpmReserve: tpm === undefined ? 0 : clampRateReserve(rateReserve(tpm, a.tpmReserve, share), tpm),
      rpmReserve: rpm === undefined ? 0 : clampRateReserve(rateReserve(rpm, a.rpmReserve, share), rpm),
      ...resolveShares(a, tpm, rpm, path),
      adaptive,
      maxQuotaPauseMs,
    };
  }
  return out;
}
