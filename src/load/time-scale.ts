/**
 * Seed time → real time for what a profile hands to something that keeps its own time (a gateway
 * config's durations), and the one thing that cannot be scaled: a rate per minute. A token bucket
 * holds one minute's worth and refills it per minute — sluice's `tpm` and the provider's alike —
 * so running a seed minute in 3 s would leave the bucket a whole real minute's worth: twenty seed
 * minutes of burst at scale 0.05, and nothing would ever be throttled. Profiles with a metered
 * provider account therefore run in real time (scale 1).
 */
import type { LoadProfile } from "./types.js";

/** Seed seconds → the scaled seconds a config duration takes (ms precision). */
export function scaledSeconds(scale: number): (seedSeconds: number) => number {
  return (s) => Math.max(0.001, Math.round(s * scale * 1000) / 1000);
}

/** A profile asked to run at a scale it cannot run at. */
export class UnscalableProfileError extends Error {
  override readonly name = "UnscalableProfileError";
  constructor(
    readonly profile: string,
    readonly scale: number,
  ) {
    super(
      `profile ${profile} runs in real time only (--scale 1, got ${scale}): its provider account meters tokens or requests per minute, and a token bucket holds a real minute's worth (sluice's and the provider's alike), so a scaled minute would scale its burst too`,
    );
  }
}

/** Throws `UnscalableProfileError` when `profile` has a metered provider account and `scale` is not 1. */
export function assertScalable(profile: LoadProfile, scale: number): void {
  const metered = profile.pods.some(
    (p) => p.kind === "provider" && (p.account.tpm !== undefined || p.account.rpm !== undefined),
  );
  if (metered && scale !== 1) throw new UnscalableProfileError(profile.name, scale);
}
