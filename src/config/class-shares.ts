/**
 * Shares of a token or request bucket by class in the config (`tpm_shares`, `rpm_shares` and
 * their threshold `share_above`, on a model or an account; issue 24, `core/class-shares.ts`):
 * fractions for `interactive`, `default` and `bulk` that add up to 1 (a class left out has no
 * share: it takes what the others leave), only beside the bucket they share, and — their
 * credits being kept in one process only — refused with a fleet store (`store: redis://…`).
 */
import type { ResolvedShares } from "../core/class-shares.js";
import type { Checker } from "./checks.js";
import type { Segment } from "./issues.js";

/** A share table as written (the schema has checked each is a number ≥ 0). */
export interface RawShares {
  interactive?: number | undefined;
  default?: number | undefined;
  bulk?: number | undefined;
}

/** What a model or an account writes about shares. */
export interface RawShareKeys {
  tpm_shares?: RawShares | undefined;
  rpm_shares?: RawShares | undefined;
  share_above?: number | undefined;
}

/** The shares of a model or an account at `at`, checked: the resolved fields, none when not written. */
export function classShares(
  c: Checker,
  at: readonly Segment[],
  o: RawShareKeys & { tpm?: number | undefined; rpm?: number | undefined },
  fleet: boolean,
): { tpmShares?: ResolvedShares; rpmShares?: ResolvedShares; shareAbove?: number } {
  const one = (bucket: "tpm" | "rpm"): ResolvedShares | undefined => {
    const key = `${bucket}_shares` as const;
    const written = o[key];
    if (written === undefined) return undefined;
    const shares: ResolvedShares = {
      interactive: written.interactive ?? 0,
      default: written.default ?? 0,
      bulk: written.bulk ?? 0,
    };
    let ok = true;
    for (const k of ["interactive", "default", "bulk"] as const)
      if (shares[k] > 1) {
        c.error([...at, key, k], "a share from 0 to 1", shares[k]);
        ok = false;
      }
    if (Math.abs(shares.interactive + shares.default + shares.bulk - 1) > 1e-9) {
      c.error([...at, key], "shares that add up to 1 (interactive, default, bulk)", written);
      ok = false;
    }
    if (o[bucket] === undefined) {
      c.error([...at, key], `no ${key} without ${bucket} (they share that bucket)`, written);
      ok = false;
    }
    if (fleet) {
      c.error(
        [...at, key],
        "no class shares with a fleet store",
        written,
        "shares of a bucket by class are built for the memory store only: each class's credit is not kept in Redis",
      );
      ok = false;
    }
    return ok ? shares : undefined;
  };
  const tpmShares = one("tpm");
  const rpmShares = one("rpm");
  const shared = o.tpm_shares !== undefined || o.rpm_shares !== undefined;
  if (o.share_above !== undefined) {
    if (o.share_above > 1) c.error([...at, "share_above"], "a fraction in (0, 1]", o.share_above);
    if (!shared)
      c.error(
        [...at, "share_above"],
        "set only with tpm_shares or rpm_shares (their threshold)",
        o.share_above,
      );
  }
  return {
    ...(tpmShares === undefined ? {} : { tpmShares }),
    ...(rpmShares === undefined ? {} : { rpmShares }),
    ...(o.share_above === undefined || !shared ? {} : { shareAbove: o.share_above }),
  };
}
