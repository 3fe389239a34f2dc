/**
 * What a process tells a fleet store about the calls waiting on one lane (`Store.watchWaiters`),
 * and where the fleet's answer about them goes: the counts per effective class (priority across
 * processes) and the flows (keys, tenants) waiting in each class with how many each has (weighted
 * fair queuing across processes, issue 24). The store answers with the part of each flow's weight
 * this process serves (`setPortions`): a flow waiting on k processes is served 1/k of its weight
 * on each, so the fleet serves it by its weight once.
 */
import type { Budget } from "./budget.js";
import type { Flow } from "./fair-queue.js";
import type { Rank } from "./priority.js";

/** Waiters per effective class (interactive, default, bulk). */
export type ClassCounts = [number, number, number];

/** Waiting calls per flow, per effective class (the anonymous flow as `ANONYMOUS`). */
export type FlowCounts = [Map<Flow, number>, Map<Flow, number>, Map<Flow, number>];

/** Where the fleet's portions of a lane's flows go: the lane's queue (wait-queue.ts). */
export interface PortionSink {
  setPortions(rank: Rank, portions: ReadonlyMap<Flow, number>): void;
}

/** One lane's waiting calls, as a fleet store reads them. */
export interface LaneWaiting {
  readonly budget: Budget;
  readonly counts: ClassCounts;
  readonly flows: FlowCounts;
  readonly queue: PortionSink;
}
