/** Shared by the Governor's unit tests: a Governor with one lane "L" on a ManualClock. */
import { ManualClock } from "../core/clock.js";
import type { GovernorOptions } from "../core/options.js";
import { Governor } from "./governor.js";

export { flush } from "../../test/helpers/index.js";

export function make(
  lane: GovernorOptions["lanes"] extends Record<string, infer L> | undefined ? L : never,
  extra: Partial<GovernorOptions> = {},
) {
  const clock = new ManualClock();
  const gov = new Governor({ lanes: { L: lane }, clock, ...extra });
  return { clock, gov, lane: () => gov.snapshot().lanes.find((l) => l.lane === "L")! };
}

/** Starts an acquire and records its name in `order` when granted. */
export function track(
  gov: Governor,
  order: string[],
  name: string,
  opts: Parameters<Governor["acquire"]>[1] = {},
) {
  return gov.acquire("L", opts).then((lease) => {
    order.push(name);
    return lease;
  });
}
