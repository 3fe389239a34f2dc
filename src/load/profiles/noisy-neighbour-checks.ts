/**
 * `noisy-neighbour`'s targets (issue 24): through sluice B's success ≥ 99 % — at the client and
 * by the pod's own count — and its p99 wait within 1.2 × its p99 with A absent, while the lane is
 * used ≥ 95 %; straight to the pod B starves. "Wait" is what B's caller waited to hear, sent →
 * answer or refusal (`GroupStats.wait_ms`): a refused call's wait counts.
 */
import type { RunStats } from "../stats.js";
import type { Check } from "../types.js";
import { fmtMs, fmtPct } from "./format.js";

/** The targets. */
export const TARGETS = {
  /** B's success rate through sluice under A's flood, at least. */
  successB: 0.99,
  /** B's p99 wait under A's flood ÷ B's p99 alone, at most. */
  waitRatio: 1.2,
  /** The lane's utilization through sluice after the warm-up, at least. */
  utilization: 0.95,
  /** B's success rate straight to the pod below this: it starves. */
  starvedB: 0.5,
} as const;

/** Group B's calls the pods completed (their own `x-sim-tenant` count) ÷ the calls B offered; null without B. */
export function podSuccessB(run: RunStats, tenant: string): { completed: number; rate: number } | null {
  const offered = run.groups.B?.offered;
  if (offered === undefined || offered === 0) return null;
  const completed = run.pods.reduce((n, p) => n + (p.tenants?.[tenant]?.completed ?? 0), 0);
  return { completed, rate: completed / offered };
}

/** B's p99 wait in `run` (sent → answer or refusal), or null. */
export function p99WaitB(run: RunStats): number | null {
  return run.groups.B?.wait_ms?.p99 ?? null;
}

function successCheck(run: RunStats, tenant: string, where: string): Check[] {
  const b = run.groups.B;
  const pod = podSuccessB(run, tenant);
  return [
    {
      name: `B's success rate ${where}, at the client`,
      target: `≥ ${fmtPct(TARGETS.successB)}`,
      value: b === undefined ? "B did not run" : `${fmtPct(b.success_rate)} (${b.completed} of ${b.offered})`,
      met: b !== undefined && b.success_rate >= TARGETS.successB,
    },
    {
      name: `B's calls the pod completed ${where} ÷ B's calls offered (the pod's own count)`,
      target: `≥ ${fmtPct(TARGETS.successB)}`,
      value: pod === null ? "B offered nothing" : `${fmtPct(pod.rate)} (${pod.completed} of ${b?.offered})`,
      met: pod !== null && pod.rate >= TARGETS.successB,
    },
  ];
}

/** A + B through sluice: B keeps its share, A uses the rest. */
export function sluiceChecks(sluice: RunStats, tenantB: string): Check[] {
  return [
    ...successCheck(sluice, tenantB, "through sluice under A's flood"),
    {
      name: "the lane's utilization through sluice after the warm-up (the pod's busy slot time): A uses what B leaves",
      target: `≥ ${fmtPct(TARGETS.utilization)}`,
      value: fmtPct(sluice.utilization),
      met: sluice.utilization >= TARGETS.utilization,
    },
  ];
}

/** A + B straight to the pod: B starves. */
export function directChecks(direct: RunStats, tenantB: string): Check[] {
  const b = direct.groups.B;
  const pod = podSuccessB(direct, tenantB);
  return [
    {
      name: "B's success rate straight to the pod under A's flood, at the client: B starves",
      target: `< ${fmtPct(TARGETS.starvedB)}`,
      value:
        b === undefined
          ? "B did not run"
          : `${fmtPct(b.success_rate)} (${b.completed} of ${b.offered}; the pod completed ${pod?.completed ?? 0}), p99 wait ${fmtMs(p99WaitB(direct))}`,
      met: b !== undefined && b.success_rate < TARGETS.starvedB,
    },
  ];
}

/** B alone through sluice: the reference, and B's p99 under A's flood held to it. */
export function aloneChecks(alone: RunStats, sluice: RunStats | null, tenantB: string): Check[] {
  const ref = p99WaitB(alone);
  const flooded = sluice === null ? null : p99WaitB(sluice);
  const ratio = ref === null || flooded === null || ref === 0 ? null : flooded / ref;
  return [
    ...successCheck(alone, tenantB, "alone through sluice (the reference)"),
    {
      name: "B's p99 wait through sluice under A's flood ÷ B's p99 wait alone",
      target: `≤ ${TARGETS.waitRatio}`,
      value:
        ratio === null
          ? `not measured (alone ${fmtMs(ref)}, under the flood ${fmtMs(flooded)})`
          : `${ratio.toFixed(2)} (${fmtMs(flooded)} ÷ ${fmtMs(ref)})`,
      met: ratio !== null && ratio <= TARGETS.waitRatio,
    },
  ];
}
