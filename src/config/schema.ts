/**
 * {@link parseConfig}: the one validator every entry point goes through (YAML file, JSON, the
 * demo, tests). The YAML shape (snake_case) is in `raw.ts`; defaults that depend on other keys and
 * the checks across keys are in `normalize.ts`; bounds that make others unreachable are warned
 * about by `reach.ts`. The Governor's options are mapped from the result once
 * (`governor-options.ts`), with no second validation. Reference: `docs/config.md`.
 */
import { ConfigErrors, fromZodIssue, toConfigError } from "./issues.js";
import { normalize } from "./normalize.js";
import { RawConfigSchema } from "./raw.js";
import type { GatewayConfig, ParseOptions, Validation } from "./types.js";

export type * from "./types.js";

/** Validates without throwing. Key checks run only when the shape is right. */
export function validateConfig(input: unknown, options: ParseOptions = {}): Validation {
  const parsed = RawConfigSchema.safeParse(input, { reportInput: true });
  if (!parsed.success) return { ok: false, issues: parsed.error.issues.flatMap(fromZodIssue) };
  return normalize(parsed.data, options);
}

/**
 * Validates a config object (parsed YAML or JSON, snake_case keys) and returns it normalized.
 *
 * @param source named in the error message (a file name).
 * @throws ConfigErrors (a {@link ConfigError}) for the first problem, with every problem in `issues`.
 */
export function parseConfig(input: unknown, source?: string, options: ParseOptions = {}): GatewayConfig {
  const result = validateConfig(input, options);
  if (result.ok) return result.config;
  throw new ConfigErrors(
    result.issues.map((issue) => toConfigError(issue, source)),
    source,
  );
}
