/**
 * A call's path (DESIGN §1): every budget it takes a slot in, all at once, and gives back in one
 * place. A lane has one path per pod (or one path when the caller picks the endpoint), built once
 * when the lane is created, so a grant allocates nothing:
 *
 *   [ lane (with its reserve), shared groups (gateway, account, GPU) | pod, the pod's GPU group ]
 *                                                                    ^ podStart
 *
 * The part from `podStart` on belongs to the pod: a re-dispatch gives back that part and takes
 * another pod's, keeping the lane's slot. Taking and giving go through the store (src/store),
 * which is where a fleet-wide budget will live.
 */
import { type Budget, ConcurrencyBudget } from "./budget.js";
import type { Pod } from "./pod.js";
import type { Rank } from "./priority.js";

export class Path {
  /**
   * The budgets whose room depends on a call's cost and that settle a reservation at its end
   * (token and request buckets, accounts). Empty for most paths, so ending a call there costs
   * nothing extra.
   */
  readonly metered: readonly Budget[];
  /**
   * The path's one budget when it is a single concurrency budget and no pod (a lane with no
   * groups, account, buckets or admission bound: the common library case), else null. Its room
   * is then one comparison, and a store that counts in place takes and gives it without walking
   * the path (`Grants.grant` / `giveBack`).
   */
  readonly solo: ConcurrencyBudget | null;

  constructor(
    /** The lane this path serves. */
    readonly lane: string,
    /** Every budget on the path, lane's part first. */
    readonly budgets: readonly Budget[],
    /** Index of the first budget that belongs to the pod; `budgets.length` without a pod. */
    readonly podStart: number,
    /** The pod this path ends at, or null when the caller picks the endpoint itself. */
    readonly pod: Pod | null,
  ) {
    this.metered = budgets.filter((b) => b.reconcile !== undefined);
    const only = budgets.length === 1 && pod === null ? budgets[0] : undefined;
    this.solo = only instanceof ConcurrencyBudget ? only : null;
  }

  /** Whether every budget from `from` on has room for a call of own class `rank` costing `cost`. */
  hasRoom(rank: Rank, cost: number, nowMs: number, from = 0): boolean {
    if (this.solo !== null && from === 0) return this.solo.hasRoom(rank);
    const budgets = this.budgets;
    for (let i = from; i < budgets.length; i++) if (!budgets[i]!.hasRoom(rank, cost, nowMs)) return false;
    return true;
  }

  /** The earliest time a budget on the path gains room by itself for a call of own class `rank` costing `cost`, or undefined. */
  nextChangeAt(nowMs: number, cost: number, rank: Rank): number | undefined {
    let at: number | undefined;
    for (const b of this.budgets) {
      const change = b.nextChangeAt(nowMs, cost, rank);
      if (change !== undefined && (at === undefined || change < at)) at = change;
    }
    return at;
  }
}

/** Builds a lane's paths, one per pod: the lane's budgets, then the pod's. */
export function lanePaths(lane: string, laneBudgets: readonly Budget[], pods: readonly Pod[]): Path[] {
  return pods.map((pod) => new Path(lane, [...laneBudgets, ...pod.budgets], laneBudgets.length, pod));
}
