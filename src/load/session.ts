/**
 * One `sluice load PROFILE` from start to receipt: run both sides, check the targets, build the
 * receipt, compare it with a baseline, write it — also when the run failed, so a failure keeps
 * its numbers.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { type BaselineComparison, compareReceipts } from "./compare.js";
import { buildReceipt, integrityChecks, type Receipt } from "./receipt.js";
import { type ProgressSink, runProfile } from "./runner.js";
import type { Check, LoadProfile } from "./types.js";

export interface SessionOptions {
  profile: LoadProfile;
  scale: number;
  /** The command line as given, for the receipt. */
  command: string;
  /** Where to write the receipt. **Default:** `receipts/PROFILE-TIMESTAMP.json`. */
  receiptPath?: string;
  /** An earlier receipt to compare with. */
  baselinePath?: string;
  gatewayUrl?: string;
  simBasePort?: number;
  only?: "sluice" | "direct";
  progress?: ProgressSink;
}

export interface SessionResult {
  receipt: Receipt;
  receiptPath: string;
  comparison: BaselineComparison | null;
  /** 0: every check met and no regression; 1: a check failed, the run failed, or a regression. */
  exitCode: 0 | 1;
}

/** A baseline file that cannot be read as a receipt. */
export class BaselineError extends Error {
  override readonly name = "BaselineError";
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`--baseline ${file}: ${reason}`);
  }
}

/** Reads a receipt written by an earlier run; throws `BaselineError`. */
export function readBaseline(file: string): Receipt {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new BaselineError(file, (e as Error).message);
  }
  const r = parsed as Partial<Receipt>;
  if (r === null || typeof r !== "object" || r.receipt_version !== 1 || typeof r.profile !== "string") {
    throw new BaselineError(file, "not a sluice load receipt (no receipt_version 1 and profile)");
  }
  return r as Receipt;
}

/** Runs the session; never throws for a failed run (the receipt says what failed). */
export async function runSession(o: SessionOptions): Promise<SessionResult> {
  // Read first: a bad baseline should stop before minutes of load, not after.
  const baseline = o.baselinePath === undefined ? null : readBaseline(o.baselinePath);
  let error: string | undefined;
  let result: Awaited<ReturnType<typeof runProfile>> = {
    sluice: null,
    direct: null,
    honouring: null,
    settings: {},
  };
  try {
    result = await runProfile({
      profile: o.profile,
      scale: o.scale,
      ...(o.gatewayUrl !== undefined ? { gatewayUrl: o.gatewayUrl } : {}),
      ...(o.simBasePort !== undefined ? { simBasePort: o.simBasePort } : {}),
      ...(o.only !== undefined ? { only: o.only } : {}),
      ...(o.progress !== undefined ? { progress: o.progress } : {}),
    });
  } catch (e) {
    error = e instanceof Error ? e.message : String(e);
  }
  const checks: Check[] = [
    ...(result.sluice === null ? [] : o.profile.checks(result.sluice, o.scale)),
    ...(result.direct === null ? [] : o.profile.directChecks(result.direct, o.scale)),
    ...(result.honouring === null || o.profile.honouringChecks === undefined
      ? []
      : o.profile.honouringChecks(result.honouring, o.scale)),
    ...(result.alone === undefined || result.alone === null || o.profile.aloneChecks === undefined
      ? []
      : o.profile.aloneChecks(result.alone, result.sluice, o.scale)),
    ...integrityChecks(result.sluice, result.direct, result.honouring, result.alone ?? null),
  ];
  const receipt = buildReceipt({
    profile: o.profile.name,
    seed: o.profile.seed,
    command: o.command,
    settings: result.settings,
    scale: o.scale,
    sluice: result.sluice,
    direct: result.direct,
    ...(o.profile.honouring === undefined ? {} : { honouring: result.honouring }),
    ...(o.profile.alone === undefined ? {} : { alone: result.alone ?? null }),
    checks,
    ...(error !== undefined ? { error } : {}),
  });
  let comparison: BaselineComparison | null = null;
  if (baseline !== null && o.baselinePath !== undefined) {
    comparison = compareReceipts(baseline, receipt, o.baselinePath);
    receipt.baseline = comparison;
  }
  const receiptPath = o.receiptPath ?? defaultReceiptPath(o.profile.name, receipt.created_at);
  mkdirSync(dirname(receiptPath), { recursive: true });
  writeFileSync(receiptPath, `${JSON.stringify(receipt, null, 2)}\n`);
  const regressed = comparison !== null && comparison.regressions.length > 0;
  return { receipt, receiptPath, comparison, exitCode: receipt.ok && !regressed ? 0 : 1 };
}

/** `receipts/ocr-flood-2026-12-01T01-30-00-000Z.json`. */
export function defaultReceiptPath(profile: string, createdAt: string): string {
  return join("receipts", `${profile}-${createdAt.replace(/[:.]/g, "-")}.json`);
}
