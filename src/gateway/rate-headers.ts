/**
 * The token and request budgets on an answer (DESIGN §3.2, issue 10): the IETF `RateLimit-Policy`
 * and `RateLimit` headers (draft-ietf-httpapi-ratelimit-headers: one item per bucket, `q` its
 * quota, `w` its window in seconds, `r` what remains, `t` seconds until it is full again), and
 * OpenAI's `x-ratelimit-limit-*` / `-remaining-*` / `-reset-*` (`tokens`, `requests`) for the
 * tightest bucket of each unit, so existing clients pace themselves by them. They replace the
 * upstream's own headers of the same names: sluice's budgets are the ones the client is held to.
 */
import type { RateLimitInfo } from "../core/rate-limits.js";

/** OpenAI's duration format: `20ms`, `1.5s`, `6m0s`. */
function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const s = Math.ceil(ms / 100) / 10;
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${Math.round(s % 60)}s`;
}

/** The headers for `limits` (empty for a lane without token or request budgets). */
export function rateLimitHeaders(limits: readonly RateLimitInfo[]): Record<string, string> {
  if (limits.length === 0) return {};
  const policies: string[] = [];
  const remaining: string[] = [];
  const tightest = new Map<string, RateLimitInfo>();
  for (const l of limits) {
    const id = `"${l.scope}-${l.unit}"`;
    policies.push(`${id};q=${l.perMinute};w=60`);
    remaining.push(`${id};r=${l.remaining};t=${Math.ceil(l.resetMs / 1000)}`);
    const t = tightest.get(l.unit);
    if (t === undefined || l.remaining < t.remaining) tightest.set(l.unit, l);
  }
  const headers: Record<string, string> = {
    "ratelimit-policy": policies.join(", "),
    ratelimit: remaining.join(", "),
  };
  for (const [unit, l] of tightest) {
    headers[`x-ratelimit-limit-${unit}`] = String(l.perMinute);
    headers[`x-ratelimit-remaining-${unit}`] = String(l.remaining);
    headers[`x-ratelimit-reset-${unit}`] = duration(l.resetMs);
  }
  return headers;
}
