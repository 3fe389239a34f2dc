/**
 * Reading a config: the path from `--config` or `SLUICE_CONFIG`, YAML (JSON is YAML) through the
 * `yaml` package, then {@link validateConfig}. Errors point at the file, line and column: a YAML
 * syntax error has path `(yaml)`; a validation error carries the line of the offending key.
 */
import { readFile } from "node:fs/promises";
import { isMap, isPair, isScalar, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import { ConfigError } from "../core/errors.js";
import { ConfigErrors, type Issue, type Segment, toConfigError } from "./issues.js";
import { type GatewayConfig, type ParseOptions, validateConfig } from "./schema.js";

/**
 * The config file to load: the `--config` argument, else `SLUICE_CONFIG`, else `undefined` (the
 * caller decides: `sluice serve` without either is an error unless `--demo`).
 */
export function resolveConfigPath(
  argvConfig?: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string | undefined {
  if (argvConfig !== undefined && argvConfig !== "") return argvConfig;
  const fromEnv = env.SLUICE_CONFIG;
  return fromEnv === undefined || fromEnv === "" ? undefined : fromEnv;
}

/**
 * Reads and validates a YAML or JSON config file.
 *
 * @throws ConfigError with path `(file)` when the file cannot be read, `(yaml)` for a syntax error,
 *   or {@link ConfigErrors} for invalid values.
 */
export async function loadConfigFile(path: string, options: ParseOptions = {}): Promise<GatewayConfig> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    const reason = (e as NodeJS.ErrnoException).code ?? String(e);
    throw new ConfigError("(file)", "a readable config file", path, reason);
  }
  return loadConfigText(text, path, options);
}

/**
 * Validates config text (YAML or JSON). `sourceName` (a file name) is used in messages.
 *
 * @throws ConfigError with path `(yaml)` for a syntax error, {@link ConfigErrors} for invalid values.
 */
export function loadConfigText(
  text: string,
  sourceName = "config",
  options: ParseOptions = {},
): GatewayConfig {
  const lineCounter = new LineCounter();
  // uniqueKeys (the default) makes a duplicated key a syntax error; merge keys (<<) are allowed.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, merge: true });
  const syntax = doc.errors[0];
  if (syntax !== undefined) {
    const at = lineCounter.linePos(syntax.pos[0]);
    const error = new ConfigError("(yaml)", "valid YAML", sourceName, syntax.message.split("\n")[0]);
    error.message = `${sourceName}, line ${at.line}, column ${at.col}: invalid YAML: ${syntax.message.split("\n")[0]}`;
    throw error;
  }
  const result = validateConfig(doc.toJS({ maxAliasCount: 100 }), options);
  if (result.ok) return result.config;
  const located = result.issues.map((issue) => ({ issue, at: locate(doc.contents, issue, lineCounter) }));
  // First problem = first in the file, so the error reads top to bottom like the file does.
  located.sort((x, y) => (x.at?.line ?? Number.POSITIVE_INFINITY) - (y.at?.line ?? Number.POSITIVE_INFINITY));
  throw new ConfigErrors(
    located.map(({ issue, at }) =>
      toConfigError(
        issue,
        at === undefined ? sourceName : `${sourceName}, line ${at.line}, column ${at.col}`,
      ),
    ),
    sourceName,
  );
}

/**
 * Line and column of the node an issue is about: the key itself for an unknown key, else its
 * value; for a missing key, the mapping that should hold it.
 */
function locate(
  root: unknown,
  issue: Issue,
  lineCounter: LineCounter,
): { line: number; col: number } | undefined {
  let node: unknown = root;
  let keyNode: unknown;
  for (const segment of issue.segments) {
    const next = child(node, segment);
    if (next === undefined) break; // missing key: report its parent
    node = next.value;
    keyNode = next.key;
  }
  const target = issue.unknownKey ? keyNode : (node ?? keyNode);
  const range = (target as Node | undefined)?.range;
  return range ? lineCounter.linePos(range[0]) : undefined;
}

function child(node: unknown, segment: Segment): { key?: unknown; value: unknown } | undefined {
  if (isSeq(node) && typeof segment === "number") {
    const item = node.items[segment];
    return item === undefined ? undefined : { value: item };
  }
  if (isMap(node)) {
    const pair = node.items.find(
      (p) => isPair(p) && String(isScalar(p.key) ? p.key.value : p.key) === String(segment),
    );
    return pair === undefined ? undefined : { key: pair.key, value: pair.value ?? pair.key };
  }
  return undefined;
}
