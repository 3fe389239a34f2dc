/**
 * A request target as the gateway routes and forwards it: the path's dot segments resolved
 * (RFC 3986 §5.2.4) and `%2e` decoded (an unreserved character, so `%2e%2e` *is* `..`, §6.2.2.2),
 * the query kept as sent. A path whose resolved form belongs to another route than the one its
 * prefix names (`/v1/../__stats`, `/v1/%2e%2e/__stats`, `/ocr/../v1/x`) is refused: a pod behind
 * `/v1/` must never be reached at a path outside it, and a path that names one route must not be
 * served by another (nginx and Envoy normalise the same way before matching a prefix).
 *
 * The check is stricter than what is forwarded: for it, `%2f` and `\` (and `%5c`) also count as
 * separators, since some servers decode or accept them as `/` (`/v1/..%2f__stats`), while the
 * forwarded path keeps them as sent, so a legitimate `%2F` in an id still reaches the pod intact.
 */
import { HttpError } from "./http-error.js";

/** Where a path goes: `/v1/` (the OpenAI API), a configured route's prefix, or the admin routes. */
export type Destination = string | null;

/** The target to forward: the resolved path, then the query (with its `?`) as sent. */
export interface Target {
  /** The resolved path (no query). */
  readonly path: string;
  /** `?…` as sent, or "". */
  readonly query: string;
}

/**
 * Resolves `url` (a request target), or throws 400 `bad_request` naming it when the resolved
 * path goes somewhere its prefix does not. `destination` maps a path to where it goes.
 */
export function resolveTarget(url: string, destination: (path: string) => Destination): Target {
  const q = url.indexOf("?");
  const raw = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? "" : url.slice(q);
  // Absolute-form targets (`http://…`) and `*` are not paths: the admin router answers them 404.
  // Most paths hold nothing to resolve: no dot, no escape, no backslash.
  if (!raw.startsWith("/") || !/[.%\\]/.test(raw)) return { path: raw, query };
  const path = hasDotSegment(raw) ? removeDotSegments(raw.replace(/%2e/gi, ".")) : raw;
  const checked = /%2e|%2f|%5c|\\/i.test(raw)
    ? removeDotSegments(raw.replace(/%2e/gi, ".").replace(/%2f|%5c|\\/gi, "/"))
    : path;
  const asked = destination(raw);
  for (const resolved of checked === path ? [path] : [path, checked]) {
    if (destination(resolved) !== asked) throw leaves(raw, asked, resolved);
  }
  return { path, query };
}

/** True when a segment of `path` may be `.` or `..` (possibly percent-encoded). */
function hasDotSegment(path: string): boolean {
  return /(^|\/)(\.|%2e){1,2}(\/|$)/i.test(path);
}

/** RFC 3986 §5.2.4 on a path starting with `/`: `.` segments dropped, `..` removes the one before. */
export function removeDotSegments(path: string): string {
  const out: string[] = [];
  const segments = path.split("/");
  for (let i = 1; i < segments.length; i++) {
    const s = segments[i]!;
    const last = i === segments.length - 1;
    if (s === ".") {
      if (last) out.push("");
    } else if (s === "..") {
      out.pop();
      if (last) out.push("");
    } else out.push(s);
  }
  return `/${out.join("/")}`;
}

function leaves(raw: string, asked: Destination, resolved: string): HttpError {
  const route = asked === null ? "the gateway's own routes" : asked;
  return new HttpError(
    400,
    "bad_request",
    `path ${JSON.stringify(raw.slice(0, 200))} leaves ${route} once its dot segments are resolved (${JSON.stringify(resolved.slice(0, 200))}); send the resolved path`,
    "path",
  );
}
