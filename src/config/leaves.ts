/**
 * Leaf schemas: one scalar each, with the human phrase it reports when wrong. Each is a zod
 * transform around a plain check function, so the phrase is exact ("an integer ≥ 1", "an http(s)
 * URL") instead of whatever zod would say, and the output is already converted (bytes, ms, Buffer).
 * A missing key and YAML `null` (`key:` with nothing after it) both mean "not set".
 */
import { z } from "zod";
import { MAX_TIMER_MS } from "../core/defaults.js";
import { isConfigError } from "../core/errors.js";
import { parseStoreUrl, STORE_URL_FORMS, StoreUrlError } from "../store/redis/connection.js";
import { type Cidr, parseCidr } from "./cidr.js";
import type { LeafParams } from "./issues.js";
import { parseDuration, parseSize } from "./units.js";

/** A check returns the converted value or calls {@link fail}. */
export type Check<T> = (value: unknown) => T;

class Bad {
  constructor(
    readonly expected: string,
    readonly hint?: string,
    /** Set when the key names a feature that is not built yet (see {@link notBuilt}). */
    readonly notBuilt?: string,
    /** What to report as received instead of the value (a URL without its password). */
    readonly shown?: unknown,
  ) {}
}

/** Rejects the value under check with what was expected and an optional hint. */
export function fail(expected: string, hint?: string): never {
  throw new Bad(expected, hint);
}

/** Rejects the value because `feature` is not built yet; `instead` says what to do meanwhile. */
function failNotBuilt(feature: string, instead: string, shown?: unknown): never {
  throw new Bad(`no value: ${feature} is not built yet`, instead, feature, shown);
}

function run<T>(check: Check<T>, value: unknown, ctx: z.core.$RefinementCtx): T {
  try {
    return check(value);
  } catch (e) {
    if (!(e instanceof Bad) && !isConfigError(e)) throw e;
    const params: LeafParams = { expected: e.expected };
    if (e.hint !== undefined) params.hint = e.hint;
    if (e instanceof Bad && e.notBuilt !== undefined) params.notBuilt = e.notBuilt;
    const input = e instanceof Bad && e.shown !== undefined ? e.shown : value;
    ctx.issues.push({ code: "custom", input, message: params.expected, params });
    return z.NEVER;
  }
}

const unset = (v: unknown): v is null | undefined => v === undefined || v === null;

/** A key that may be left out; its output is `undefined` then. */
export function optional<T>(check: Check<T>) {
  return z.unknown().transform((v, ctx): T | undefined => (unset(v) ? undefined : run(check, v, ctx)));
}

/** A key with a default, given in output units (bytes, ms). */
export function withDefault<T>(check: Check<T>, fallback: T) {
  return z.unknown().transform((v, ctx): T => (unset(v) ? fallback : run(check, v, ctx)));
}

/** A key that must be present. */
export function required<T>(check: Check<T>) {
  return z.unknown().transform((v, ctx): T => run(check, unset(v) ? undefined : v, ctx));
}

/** Integer ≥ `min`. */
export const int =
  (min: number): Check<number> =>
  (v) =>
    typeof v === "number" && Number.isSafeInteger(v) && v >= min
      ? v
      : fail(
          `an integer ≥ ${min}`,
          typeof v === "number" && !Number.isInteger(v) ? "no fractions" : undefined,
        );

/** Finite number ≥ `min`. */
export const atLeast =
  (min: number): Check<number> =>
  (v) =>
    typeof v === "number" && Number.isFinite(v) && v >= min ? v : fail(`a number ≥ ${min}`);

/** Finite number > 0. */
export const positive: Check<number> = (v) =>
  typeof v === "number" && Number.isFinite(v) && v > 0 ? v : fail("a number > 0");

/** `true` or `false` (YAML booleans; the strings "yes"/"on" are not booleans in YAML 1.2). */
export const bool: Check<boolean> = (v) => (typeof v === "boolean" ? v : fail("true or false"));

/** One of a fixed set of strings. */
export const oneOf =
  <const T extends string>(...values: T[]): Check<T> =>
  (v) =>
    values.includes(v as T) ? (v as T) : fail(`one of ${values.join(", ")}`);

/** A name: a non-empty string without spaces. `what` describes it ("a model name"). */
export const name =
  (what: string): Check<string> =>
  (v) =>
    typeof v === "string" && /^\S+$/.test(v) && v !== "__proto__"
      ? v
      : fail(`${what} (a non-empty string without spaces)`);

/** Bytes from a size (`20MiB`, `512KB`, a byte count). */
export const size: Check<number> = (v) => parseSize(v);

/** Milliseconds from a duration whose plain numbers are seconds; `> 0` unless `allowZero`. */
export const duration =
  (allowZero = false): Check<number> =>
  (v) => {
    const ms = parseDuration(v);
    if (ms === 0 && !allowZero) fail("a duration > 0 such as 30s, 250ms or a number of seconds");
    // Every duration ends up in a timer (a queue timeout, a pause, a poll): past Node's longest,
    // the timer would fire at once instead.
    if (ms > MAX_TIMER_MS)
      fail(`a duration up to ${MAX_TIMER_MS} ms (~24.8 days, the longest timer Node can set)`);
    return ms;
  };

/**
 * An http(s) URL, normalized by WHATWG URL parsing without the bare trailing `/`
 * (`http://10.0.0.5:8000/` → `http://10.0.0.5:8000`). Credentials in the URL are refused: secrets
 * never sit in the config.
 */
export const httpUrl: Check<string> = (v) => {
  const url = typeof v === "string" && URL.canParse(v) ? new URL(v) : undefined;
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) fail("an http(s) URL");
  if (url.username !== "" || url.password !== "") {
    fail("an http(s) URL without credentials", "name the upstream key's variable in upstream_api_key_env");
  }
  return url.href.endsWith("/") && url.pathname === "/" && url.search === ""
    ? url.href.slice(0, -1)
    : url.href;
};

/** A SHA-256 digest as 64 hex characters; output is the 32 raw bytes. */
export const sha256: Check<Buffer> = (v) => {
  if (typeof v === "string" && /^[0-9a-fA-F]{64}$/.test(v)) return Buffer.from(v.toLowerCase(), "hex");
  const hint =
    typeof v === "number"
      ? "quote the digest so YAML keeps it a string"
      : typeof v === "string" && v.length !== 64
        ? `got ${v.length} characters; store the hex digest of the key (printf %s "$KEY" | sha256sum), never the key`
        : undefined;
  return fail("a SHA-256 digest: 64 hex characters", hint);
};

/** An environment variable name (the variable that holds an upstream key, never the key). */
export const envVarName: Check<string> = (v) =>
  typeof v === "string" && /^[A-Z_][A-Z0-9_]*$/.test(v)
    ? v
    : fail(
        "an environment variable name matching [A-Z_][A-Z0-9_]*",
        typeof v === "string" && /[a-z]/.test(v) && v.length >= 20
          ? "this looks like a key itself: put the key in an environment variable and name the variable here"
          : undefined,
      );

/** A path prefix such as `/ocr/`. */
export const pathPrefix: Check<string> = (v) =>
  typeof v === "string" && v.startsWith("/") && !/\s/.test(v) ? v : fail('a path prefix starting with "/"');

/** `host:port`, `[v6]:port`, or a bare port (host 127.0.0.1). Port 0 asks the OS for a free one. */
export const listen: Check<{ host: string; port: number }> = (v) => {
  const expected = "host:port such as 127.0.0.1:8080, [::1]:8080 or a port number (0–65535)";
  const text = typeof v === "number" ? String(v) : typeof v === "string" ? v.trim() : fail(expected);
  const match = /^(?:(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):)?(\d{1,5})$/.exec(text);
  const port = Number(match?.[2]);
  if (match === null || port > 65_535) return fail(expected);
  const host = match[1] === undefined ? "127.0.0.1" : match[1].replace(/^\[(.*)\]$/, "$1");
  return { host, port };
};

/** An IP address or CIDR block (`10.0.0.0/8`, `::1/128`, `127.0.0.1`): a proxy trusted to forward. */
export const cidr: Check<Cidr> = (v) =>
  (typeof v === "string" ? parseCidr(v) : undefined) ??
  fail(
    "an IP address or CIDR block such as 10.0.0.0/8, 127.0.0.1 or ::1/128",
    typeof v === "string" && /[a-z]/i.test(v) && !v.includes(":")
      ? "name addresses, not host names"
      : undefined,
  );

/**
 * A key kept for a feature that is not built yet: leaving it out is fine, any value is refused
 * with an error that says so and what to do instead (never accepted and silently ignored).
 */
export const notBuilt = (feature: string, instead: string) =>
  optional<undefined>(() => failNotBuilt(feature, instead));

/** Where budgets live: `memory` (one process) or a Redis URL (a fleet of processes). */
export type StoreConfig = { readonly kind: "memory" } | { readonly kind: "redis"; readonly url: string };

/**
 * `memory`, or a Redis URL: one server (`redis://`, `rediss://`), a Cluster (`redis+cluster://`)
 * or a Sentinel group (`redis+sentinel://`); src/store/redis/connection.ts reads the forms, so
 * the config accepts exactly what the store can open. A password is never echoed in an error.
 */
export const store: Check<StoreConfig> = (v) => {
  if (v === "memory") return { kind: "memory" };
  if (typeof v !== "string") throw new Bad(STORE_URL_FORMS);
  try {
    parseStoreUrl(v);
  } catch (e) {
    if (!(e instanceof StoreUrlError)) throw e;
    if (e.notBuilt !== undefined)
      failNotBuilt(e.notBuilt, "use redis+cluster:// or redis+sentinel:// on a trusted network", e.received);
    throw new Bad(e.expected, undefined, undefined, e.received);
  }
  return { kind: "redis", url: v };
};
