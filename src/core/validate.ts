/**
 * The few checks the option resolvers share (STYLE G7): each throws `ConfigError` naming the
 * option's path, what was expected and what arrived.
 */
import { ConfigError } from "./errors.js";

export function check(ok: boolean, path: string, expected: string, received: unknown): void {
  if (!ok) throw new ConfigError(path, expected, received);
}

export const isInt = (v: unknown, min: number): v is number =>
  typeof v === "number" && Number.isInteger(v) && v >= min;

export const isNum = (v: unknown, min: number): v is number =>
  typeof v === "number" && Number.isFinite(v) && v >= min;

/** Refuses a key of `obj` not in `allowed`, as an unknown option. */
export function knownKeys(obj: object, allowed: readonly string[], path: string): void {
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k))
      throw new ConfigError(`${path}.${k}`, `one of ${allowed.join(", ")}`, k, "unknown option");
  }
}
