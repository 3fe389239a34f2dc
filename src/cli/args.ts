/**
 * The CLI's flag parsing: node:util `parseArgs`, with its errors said the way the config's are —
 * what was wrong, the valid values, and a "did you mean" — instead of Node's own wording ("Option
 * '--rps' argument is ambiguous. Did you forget to specify the option argument…").
 *
 * One case is not an error at all: a negative number after a flag that takes a value
 * (`--rps -3`). parseArgs refuses it as ambiguous (it could be a flag); here it is read as the
 * flag's value, so the command's own check answers what the flag expects ("--rps: expected a
 * number > 0, got -3") rather than a parser complaint.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";
import { nearestKey } from "../config/suggest.js";

type Options = NonNullable<ParseArgsConfig["options"]>;
/** What parseArgs returns for these options, strict. */
type Parsed<O extends Options, P extends boolean> = ReturnType<
  typeof parseArgs<{ options: O; strict: true; allowPositionals: P }>
>;

/** A flag the parser cannot take, said plainly; the command prints it with its usage and exits 2. */
export class CliUsageError extends Error {
  override readonly name = "CliUsageError";
  constructor(
    /** The flag as written (`--list`), or undefined for a stray positional. */
    readonly flag: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** A value that parseArgs would take for a flag of its own: `-3`, `-0.5`, `-1e3`. */
const NEGATIVE_NUMBER = /^-(\d|\.\d)/;

/**
 * `parseArgs({ args, options, strict: true, allowPositionals })`, except that a negative number
 * after a value flag is that flag's value, and every parser error is a {@link CliUsageError}
 * naming the flag, what it takes and the nearest known flag.
 */
export function parseCliArgs<const O extends Options, const P extends boolean = false>(
  args: readonly string[],
  options: O,
  allowPositionals?: P,
): Parsed<O, P> {
  const joined = joinNegativeValues(args, options);
  try {
    return parseArgs({
      args: joined,
      options,
      strict: true,
      allowPositionals: allowPositionals ?? false,
    }) as Parsed<O, P>;
  } catch (error) {
    throw explain(error, options);
  }
}

/** `--rps -3` → `--rps=-3`: a long value flag followed by a negative number takes it as its value. */
function joinNegativeValues(args: readonly string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = args[i + 1];
    const name = arg.startsWith("--") ? arg.slice(2) : undefined;
    if (name !== undefined && !name.includes("=") && options[name]?.type === "string" && next !== undefined) {
      if (NEGATIVE_NUMBER.test(next)) {
        out.push(`${arg}=${next}`);
        i++;
        continue;
      }
    }
    out.push(arg);
  }
  return out;
}

/** Node's parseArgs error as a {@link CliUsageError}; anything else as it was. */
function explain(error: unknown, options: Options): unknown {
  const code = (error as { code?: unknown }).code;
  const message = (error as Error).message ?? "";
  const flags = Object.keys(options).map((name) => `--${name}`);
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const flag = /'([^']+)'/.exec(message)?.[1] ?? "?";
    const near = nearestKey(flag.replace(/^-+/, "").split("=")[0]!, Object.keys(options));
    const hint = near === undefined ? "" : `; did you mean --${near}?`;
    return new CliUsageError(flag, `unknown flag ${flag}${hint} (the flags: ${flags.join(", ")})`);
  }
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    const flag = /'(--?[\w-]+)/.exec(message)?.[1] ?? "?";
    const name = flag.replace(/^-+/, "");
    const option = options[name] ?? Object.values(options).find((o) => o.short === name);
    if (option?.type === "boolean") return new CliUsageError(flag, `${flag} takes no value`);
    if (/ambiguous/.test(message)) {
      return new CliUsageError(
        flag,
        `${flag} needs a value, and what follows it looks like a flag (write ${flag}=VALUE for a value that starts with "-")`,
      );
    }
    return new CliUsageError(flag, `${flag} needs a value`);
  }
  if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") {
    const arg = /'([^']+)'/.exec(message)?.[1] ?? "?";
    return new CliUsageError(
      undefined,
      `unexpected argument "${arg}": this command takes only flags (${flags.join(", ")})`,
    );
  }
  return error;
}
