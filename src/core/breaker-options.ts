/**
 * A lane's breaker options validated (STYLE G7) with the defaults of the one table applied: what
 * `Breaker` runs on. Split from options.ts to keep each file small.
 */
import type { BreakerOptions, BreakerSettings } from "./breaker.js";
import { DEFAULTS } from "./defaults.js";
import { check, isInt, isNum, knownKeys } from "./validate.js";

/** `o` without its `undefined` members, so spreading it over defaults keeps the defaults. */
function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Validates `raw` (at `path`, e.g. `lanes.chat.breaker`) and applies the defaults. */
export function resolveBreaker(raw: BreakerOptions | undefined, path: string): BreakerSettings {
  const b = raw ?? {};
  check(typeof b === "object" && b !== null, path, "an object", b);
  knownKeys(b, Object.keys(DEFAULTS.breaker), path);
  const breaker: BreakerSettings = { ...DEFAULTS.breaker, ...definedOnly(b) };
  check(typeof breaker.enabled === "boolean", `${path}.enabled`, "true or false", breaker.enabled);
  check(isInt(breaker.failThreshold, 1), `${path}.failThreshold`, "an integer ≥ 1", breaker.failThreshold);
  check(
    isNum(breaker.baseCooldownMs, 0),
    `${path}.baseCooldownMs`,
    "a number of ms ≥ 0",
    breaker.baseCooldownMs,
  );
  check(
    isNum(breaker.maxCooldownMs, breaker.baseCooldownMs),
    `${path}.maxCooldownMs`,
    `a number of ms ≥ baseCooldownMs (${breaker.baseCooldownMs})`,
    breaker.maxCooldownMs,
  );
  check(isNum(breaker.backoffFactor, 1), `${path}.backoffFactor`, "a number ≥ 1", breaker.backoffFactor);
  return breaker;
}
