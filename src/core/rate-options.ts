/**
 * The options of the rate budgets and accounts (DESIGN §1 table, seed 004), validated once like
 * every other option (`options.ts`): a lane's own `tpm` / `rpm`, and provider accounts that group
 * lanes under one in-flight cap (adaptive), one `tpm`, one `rpm` and one quota pause.
 */
import type { AccountSettings } from "./account.js";
import { DEFAULTS } from "./defaults.js";
import { check, isInt, isNum, knownKeys } from "./validate.js";

/** A provider account shared by several lanes (`LaneOptions.account` names it). */
export interface AccountOptions {
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

const ACCOUNT_KEYS = ["maxInflight", "tpm", "rpm", "adaptive", "maxQuotaPauseMs"] as const;

/** A rate: a whole number ≥ 1 per minute, or undefined. */
export function checkRate(v: unknown, path: string): number | undefined {
  if (v === undefined) return undefined;
  check(isInt(v, 1), path, "a whole number ≥ 1 per minute", v);
  return v as number;
}

/** Validates `accounts` and applies the defaults. */
export function resolveAccounts(
  accounts: Readonly<Record<string, AccountOptions>> | undefined,
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
    out[name] = { maxInflight: a.maxInflight, tpm, rpm, adaptive, maxQuotaPauseMs };
  }
  return out;
}
