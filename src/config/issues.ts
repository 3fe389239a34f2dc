/**
 * Config problems as data (`Issue`), turned into {@link ConfigError}s with readable paths. Zod's own
 * messages never reach the operator: every zod issue is mapped here to a path, a human `expected`
 * phrase and the offending value (STYLE G7).
 */
import type { z } from "zod";
import { ConfigError } from "../core/errors.js";
import { nearestKey } from "./suggest.js";

/** One step of a key path: an object key or a list index. */
export type Segment = string | number;

/** One problem found in a config, before it becomes a {@link ConfigError}. */
export interface Issue {
  /** Where: `["models", 2, "breaker", "backoff_factor"]`. */
  readonly segments: readonly Segment[];
  readonly expected: string;
  readonly received: unknown;
  readonly hint?: string;
  /** Set when the key itself is the problem (not allowed here), rather than its value. */
  readonly unknownKey?: boolean;
  /** Set when the key names a feature that is not built yet: the feature, e.g. "fleet mode (Redis store)". */
  readonly notBuilt?: string;
}

/**
 * Thrown by `parseConfig`, `loadConfigText` and `loadConfigFile`. It *is* a {@link ConfigError}:
 * `path`, `expected`, `received` and `hint` are those of the first problem (in document order when
 * the config came from YAML), and `issues` lists every problem found, the first included. The
 * message lists them all, one per line.
 */
export class ConfigErrors extends ConfigError {
  /** Every problem found, first one first; never empty. */
  readonly issues: readonly ConfigError[];
  /** The file or name the config came from, when known. */
  readonly source: string | undefined;

  constructor(issues: readonly ConfigError[], source?: string) {
    const first = issues[0];
    if (first === undefined) throw new TypeError("ConfigErrors needs at least one issue");
    super(first.path, first.expected, first.received, first.hint);
    this.issues = issues;
    this.source = source;
    const head = source === undefined ? "invalid config" : `invalid config in ${source}`;
    this.message =
      issues.length === 1
        ? first.message
        : `${head}: ${issues.length} problems\n${issues.map((e) => `  - ${e.message}`).join("\n")}`;
  }
}

/** `models[2].breaker.backoff_factor` from its segments; the empty path is `(root)`. */
export function formatPath(segments: readonly Segment[]): string {
  let out = "";
  for (const s of segments) {
    if (typeof s === "number") out += `[${s}]`;
    else if (/^[A-Za-z_][\w-]*$/.test(s)) out += out === "" ? s : `.${s}`;
    else out += `[${JSON.stringify(s)}]`; // names with dots or spaces stay unambiguous
  }
  return out === "" ? "(root)" : out;
}

/**
 * The {@link ConfigError} for one issue. `where` (e.g. `sluice.yaml, line 14, column 5`) is added
 * at the end of the message when the loader knows it.
 */
export function toConfigError(issue: Issue, where?: string): ConfigError {
  const path = formatPath(issue.segments);
  const error = new ConfigError(path, issue.expected, issue.received, issue.hint);
  if (issue.unknownKey) error.message = `${path}: unknown key${issue.hint ? ` (${issue.hint})` : ""}`;
  if (issue.notBuilt !== undefined) {
    error.message = `${path}: ${issue.notBuilt} is not built yet${issue.hint ? `; ${issue.hint}` : ""}`;
  }
  if (where !== undefined) error.message += ` (at ${where})`;
  return error;
}

// Structural schemas carry their phrase in zod's message slot behind these tags (schema.ts sets
// them), because a finalized zod issue no longer points at the schema that raised it.
const EXPECTED_TAG = "sluice-expected:";
const KEYS_TAG = "sluice-keys:";

/** Zod `error` option that makes an issue read "expected `phrase`". */
export function expecting(phrase: string): { error: () => string } {
  return { error: () => EXPECTED_TAG + phrase };
}

/**
 * Zod `error` option for a strict object: unknown keys are reported with a nearest-key suggestion,
 * and a value that is not a mapping at all reads "expected `what`".
 */
export function strictErrors(
  keys: readonly string[],
  what: string,
): { error: (iss: { code?: string }) => string | undefined } {
  return {
    error: (iss) =>
      iss.code === "unrecognized_keys"
        ? KEYS_TAG + keys.join(",")
        : iss.code === "invalid_type"
          ? EXPECTED_TAG + what
          : undefined,
  };
}

/** Issue params that leaf schemas attach to a `custom` issue. */
export interface LeafParams {
  expected: string;
  hint?: string;
  notBuilt?: string;
}

/** Our issues for one zod issue (an object with two unknown keys gives two). */
export function fromZodIssue(iss: z.core.$ZodIssue): Issue[] {
  const segments = iss.path.filter((s): s is Segment => typeof s !== "symbol");
  const received = (iss as { input?: unknown }).input;
  if (iss.code === "unrecognized_keys") {
    const known = iss.message.startsWith(KEYS_TAG) ? iss.message.slice(KEYS_TAG.length).split(",") : [];
    return iss.keys.map((key) => ({
      segments: [...segments, key],
      expected: `one of the known keys: ${known.join(", ")}`,
      received: key,
      hint: unknownKeyHint(key, known),
      unknownKey: true,
    }));
  }
  if (iss.code === "custom" && iss.params !== undefined && "expected" in iss.params) {
    const { expected, hint, notBuilt } = iss.params as LeafParams;
    return [
      {
        segments,
        expected,
        received,
        ...(hint === undefined ? {} : { hint }),
        ...(notBuilt === undefined ? {} : { notBuilt }),
      },
    ];
  }
  if (iss.message.startsWith(EXPECTED_TAG)) {
    return [{ segments, expected: iss.message.slice(EXPECTED_TAG.length), received }];
  }
  if (iss.code === "invalid_type") {
    const expected =
      iss.expected === "object"
        ? "a mapping of keys"
        : iss.expected === "array"
          ? "a list"
          : `a ${iss.expected}`;
    return [{ segments, expected, received }];
  }
  return [{ segments, expected: "a valid value", received }];
}

// Plaintext secrets get a pointed answer: the config holds only SHA-256 digests and env var names.
const SECRET_KEYS = new Set(["key", "api_key", "apikey", "secret", "token", "password", "bearer"]);

/**
 * Keys that existed once and were removed, with why: a config that still has one is told what
 * happened instead of "did you mean".
 */
const REMOVED_KEYS: Readonly<Record<string, string>> = {
  parse_permits:
    "removed: Node parses JSON synchronously on one thread, so parsing is already serialized; " +
    "what bounds parsing is admission.max_body_bytes (per request) and admission.max_buffered_bytes (all at once)",
};

function unknownKeyHint(key: string, known: readonly string[]): string {
  const removed = Object.hasOwn(REMOVED_KEYS, key) ? REMOVED_KEYS[key] : undefined;
  if (removed !== undefined) return removed;
  if (SECRET_KEYS.has(key.toLowerCase())) {
    return known.includes("sha256")
      ? 'a config never holds a plaintext key: store its SHA-256 hex digest under "sha256" (printf %s "$KEY" | sha256sum)'
      : 'a config never holds a plaintext upstream key: name its environment variable in "upstream_api_key_env"';
  }
  const near = nearestKey(key, known);
  return near === undefined ? `known keys: ${known.join(", ")}` : `did you mean "${near}"?`;
}
