/**
 * Sizes and durations as operators write them in YAML (`20MiB`, `250ms`), turned into the one unit
 * the code uses: bytes and milliseconds. Both throw {@link ConfigError} naming the key path, so a
 * bad value is reported like any other config mistake (STYLE G7).
 */
import { ConfigError } from "../core/errors.js";

/** Multipliers, in bytes. Binary (`KiB`, IEC) and decimal (`KB`, SI) are both accepted, spelled exactly. */
const SIZE_UNITS: Readonly<Record<string, number>> = {
  B: 1,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  TB: 1e12,
  KiB: 2 ** 10,
  MiB: 2 ** 20,
  GiB: 2 ** 30,
  TiB: 2 ** 40,
};

/** Multipliers, in milliseconds. */
const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** What {@link parseSize} accepts, for `ConfigError.expected`. */
export const SIZE_EXPECTED = "a size such as 20MiB, 512KB, 1GiB or a whole number of bytes";
/** What {@link parseDuration} accepts, for `ConfigError.expected`. */
export const DURATION_EXPECTED = "a duration such as 30s, 250ms, 5m, 1h or a number of seconds";

// A non-negative decimal number, then optional spaces, then an optional unit made of letters.
const QUANTITY = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*([A-Za-z]*)\s*$/;

/**
 * Bytes from a size: `"20MiB"` → 20971520, `"512KB"` → 512000, `"1GiB"`, `"100B"`, or a plain
 * whole number of bytes (`1024` or `"1024"`). Units are case-sensitive (`Mb` would be megabits,
 * so it is refused rather than guessed). Fractions are allowed with a unit (`"1.5KiB"` → 1536)
 * and rounded to the nearest byte.
 *
 * @param path the key path reported in the error, e.g. `admission.max_body_bytes`.
 * @throws ConfigError for negative numbers, NaN, unknown units and anything that is not a size.
 */
export function parseSize(value: unknown, path = "size"): number {
  if (typeof value === "number") {
    if (Number.isSafeInteger(value) && value >= 0) return value;
    throw new ConfigError(path, SIZE_EXPECTED, value, value < 0 ? "sizes cannot be negative" : undefined);
  }
  const { amount, unit } = quantity(value, path, SIZE_EXPECTED);
  if (unit === "") {
    if (Number.isSafeInteger(amount)) return amount;
    throw new ConfigError(path, SIZE_EXPECTED, value, "a size without a unit is a whole number of bytes");
  }
  const factor = SIZE_UNITS[unit];
  if (factor === undefined) {
    throw new ConfigError(path, SIZE_EXPECTED, value, `unknown unit "${unit}"; use ${unitList(SIZE_UNITS)}`);
  }
  const bytes = Math.round(amount * factor);
  if (!Number.isSafeInteger(bytes)) throw new ConfigError(path, SIZE_EXPECTED, value, "too large");
  return bytes;
}

/**
 * Milliseconds from a duration: `"250ms"` → 250, `"30s"` → 30000, `"5m"`, `"1h"`, `"1.5s"`.
 * A plain number (`1.5` or `"1.5"`) is in `plainUnit`, which is seconds by default because every
 * duration key in the config ends in `_s` (`queue_timeout_s: 1.5` means 1500 ms). Pass `"ms"` for
 * keys ending in `_ms`.
 *
 * @param path the key path reported in the error, e.g. `admission.queue_timeout_s`.
 * @throws ConfigError for negative numbers, NaN, Infinity, unknown units and anything else.
 */
export function parseDuration(value: unknown, path = "duration", plainUnit: "s" | "ms" = "s"): number {
  if (typeof value === "number") {
    if (Number.isFinite(value) && value >= 0) return value * DURATION_UNITS[plainUnit]!;
    throw new ConfigError(
      path,
      DURATION_EXPECTED,
      value,
      value < 0 ? "durations cannot be negative" : undefined,
    );
  }
  const { amount, unit } = quantity(value, path, DURATION_EXPECTED);
  const factor = DURATION_UNITS[unit === "" ? plainUnit : unit];
  if (factor === undefined) {
    throw new ConfigError(
      path,
      DURATION_EXPECTED,
      value,
      `unknown unit "${unit}"; use ${unitList(DURATION_UNITS)}`,
    );
  }
  const ms = amount * factor;
  if (!Number.isFinite(ms)) throw new ConfigError(path, DURATION_EXPECTED, value, "too large");
  return ms;
}

function quantity(value: unknown, path: string, expected: string): { amount: number; unit: string } {
  if (typeof value !== "string") throw new ConfigError(path, expected, value);
  const match = QUANTITY.exec(value);
  if (match === null) {
    const hint = /^\s*-/.test(value) ? "cannot be negative" : undefined;
    throw new ConfigError(path, expected, value, hint);
  }
  return { amount: Number(match[1]), unit: match[2] ?? "" };
}

function unitList(units: Readonly<Record<string, number>>): string {
  return Object.keys(units).join(", ");
}
