/**
 * Priority classes (DESIGN §1.1). Waiters are served by effective class, then FIFO by arrival;
 * the effective class rises one step per `agingMs` waited, so bulk work cannot starve.
 */

/** `interactive`: a person is watching; `default`; `bulk`: fan-outs, sweeps, batch. */
export type Priority = "interactive" | "default" | "bulk";

/** Every class, highest first. */
export const PRIORITIES: readonly Priority[] = ["interactive", "default", "bulk"];

/** Numeric rank: 0 = interactive (highest) … 2 = bulk. */
export type Rank = 0 | 1 | 2;

export const INTERACTIVE: Rank = 0;
export const DEFAULT_RANK: Rank = 1;
export const BULK: Rank = 2;

/** The rank of a class, or `undefined` for anything that is not one. */
export function rankOf(value: unknown): Rank | undefined {
  switch (value) {
    case "interactive":
      return 0;
    case "default":
      return 1;
    case "bulk":
      return 2;
    default:
      return undefined;
  }
}

/** Parses a class name, throwing a `TypeError` that names the allowed ones. */
export function parsePriority(value: unknown, where = "priority"): Priority {
  rankOrThrow(value, where);
  return value as Priority;
}

/**
 * The rank of a class, or the one `TypeError` for a value that is not a class — the same
 * wherever a class is asked for (acquire, tryAcquire, check, withPriority).
 */
export function rankOrThrow(value: unknown, where = "priority"): Rank {
  const rank = rankOf(value);
  if (rank === undefined)
    throw new TypeError(`${where} must be one of ${PRIORITIES.join(", ")}; got ${JSON.stringify(value)}`);
  return rank;
}

/**
 * The effective rank of a waiter of rank `rank` that arrived at `arrivedAt`: one step up per
 * `agingMs` waited, never above interactive.
 */
export function effectiveRank(rank: Rank, arrivedAt: number, nowMs: number, agingMs: number): number {
  if (rank === 0) return 0;
  const steps = Math.floor((nowMs - arrivedAt) / agingMs);
  return steps >= rank ? 0 : rank - Math.max(steps, 0);
}
