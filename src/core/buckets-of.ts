/** The token and request buckets of a metered budget: a lane's own bucket, or its account's two. */
import { AccountBudget } from "./account.js";
import type { Budget } from "./budget.js";
import { RateBudget } from "./rate-budget.js";

/** The token and request buckets of a metered budget (a lane's own, or its account's). */
export function bucketsOf(b: Budget): RateBudget[] {
  if (b instanceof RateBudget) return [b];
  if (b instanceof AccountBudget) {
    const out: RateBudget[] = [];
    if (b.tokens !== null) out.push(b.tokens);
    if (b.requests !== null) out.push(b.requests);
    return out;
  }
  return [];
}
