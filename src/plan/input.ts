/**
 * `sluice plan`'s flags as numbers: each one checked, and a bad or missing one refused naming
 * the flag, what it expects and what it got (STYLE G7).
 */
import type { PlanInput } from "./plan.js";

/** A flag whose value cannot be used. */
export class PlanInputError extends Error {
  override readonly name = "PlanInputError";
  readonly code = "plan_input_invalid";
  constructor(
    /** The flag, with its dashes: `--rps`. */
    readonly flag: string,
    readonly expected: string,
    /** What arrived; undefined when the flag is missing. */
    readonly received: string | undefined,
  ) {
    super(
      received === undefined
        ? `${flag} is required: ${expected}`
        : `${flag}: expected ${expected}, got ${JSON.stringify(received)}`,
    );
  }
}

/** The raw flag values (strings, as parseArgs gives them). */
export interface PlanFlags {
  rps?: string;
  "latency-s"?: string;
  "tokens-per-request"?: string;
  "reasoning-tokens"?: string;
  tpm?: string;
  pods?: string;
  "per-pod-max"?: string;
}

/**
 * Turns the flags into a {@link PlanInput}. `measured` (from `--from-metrics`) fills what the
 * flags leave out; a flag always wins. Throws `PlanInputError`.
 */
export function planInput(flags: PlanFlags, measured: Partial<PlanInput> = {}): PlanInput {
  const rps = flags.rps !== undefined ? positive("--rps", flags.rps) : measured.rps;
  if (rps === undefined) throw new PlanInputError("--rps", "requests per second, a number > 0", undefined);
  const latencyS =
    flags["latency-s"] !== undefined ? positive("--latency-s", flags["latency-s"]) : measured.latencyS;
  if (latencyS === undefined) {
    throw new PlanInputError(
      "--latency-s",
      "the mean latency of one request in seconds, a number > 0",
      undefined,
    );
  }
  const input: PlanInput = { rps, latencyS };
  const tokens =
    flags["tokens-per-request"] !== undefined
      ? positive("--tokens-per-request", flags["tokens-per-request"])
      : measured.tokensPerRequest;
  const tpm = flags.tpm !== undefined ? positive("--tpm", flags.tpm) : undefined;
  if (tpm !== undefined && tokens === undefined) {
    throw new PlanInputError(
      "--tokens-per-request",
      "mean tokens per request, a number > 0 (needed with --tpm)",
      undefined,
    );
  }
  if (tokens !== undefined) input.tokensPerRequest = tokens;
  const reasoningRaw = flags["reasoning-tokens"];
  if (reasoningRaw !== undefined) {
    const reasoning = Number(reasoningRaw);
    if (reasoningRaw.trim() === "" || !Number.isFinite(reasoning) || reasoning < 0)
      throw new PlanInputError("--reasoning-tokens", "a number ≥ 0", reasoningRaw);
    if (tokens === undefined) {
      throw new PlanInputError(
        "--tokens-per-request",
        "mean tokens per request, a number > 0 (--reasoning-tokens adds to it)",
        undefined,
      );
    }
    input.reasoningTokens = reasoning;
  }
  if (tpm !== undefined) input.tpm = tpm;
  const pods = flags.pods !== undefined ? integer("--pods", flags.pods) : undefined;
  const perPod =
    flags["per-pod-max"] !== undefined ? integer("--per-pod-max", flags["per-pod-max"]) : undefined;
  if (pods !== undefined && perPod === undefined) {
    throw new PlanInputError(
      "--per-pod-max",
      "calls one pod carries at once, an integer ≥ 1 (needed with --pods)",
      undefined,
    );
  }
  if (perPod !== undefined && pods === undefined) {
    throw new PlanInputError(
      "--pods",
      "the number of pods, an integer ≥ 1 (needed with --per-pod-max)",
      undefined,
    );
  }
  if (pods !== undefined && perPod !== undefined) {
    input.pods = pods;
    input.perPodMax = perPod;
  }
  return input;
}

function positive(flag: string, raw: string): number {
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(n) || n <= 0) throw new PlanInputError(flag, "a number > 0", raw);
  return n;
}

function integer(flag: string, raw: string): number {
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isInteger(n) || n < 1)
    throw new PlanInputError(flag, "an integer ≥ 1", raw);
  return n;
}
