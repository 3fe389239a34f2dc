/**
 * `pods[].redispatch_statuses`: the answers that mean, for this pod, "the call was not started",
 * so sluice may send it to another pod (`gateway/redispatch.ts`). Only a pod's overload or
 * throttling statuses (429, 5xx) can mean that: a 2xx–4xx answer is the call's own result.
 */
import { type Check, fail } from "./leaves.js";

const EXPECTED = "a list of HTTP statuses, each 429 or 500–599, such as [503]";

/** The listed statuses, each once, in the order written. */
export const redispatchStatuses: Check<readonly number[]> = (v) => {
  if (!Array.isArray(v)) return fail(EXPECTED);
  const out: number[] = [];
  for (const [i, s] of v.entries()) {
    if (typeof s !== "number" || !Number.isInteger(s) || (s !== 429 && (s < 500 || s > 599))) {
      return fail(
        EXPECTED,
        `entry ${i} (${JSON.stringify(s)}) is not 429 or 5xx: only a pod's overload or throttling status can mean it did not run the call`,
      );
    }
    if (!out.includes(s)) out.push(s);
  }
  return out;
};
