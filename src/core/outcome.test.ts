import assert from "node:assert/strict";
import { test } from "node:test";
import { QueueFullError } from "./errors.js";
import { classifyOutcome } from "./outcome.js";

test("overload statuses and refusals before any byte are congestion", () => {
  for (const s of [502, 503, 504, 529]) assert.equal(classifyOutcome(s).kind, "congestion", String(s));
  assert.equal(classifyOutcome({ refused: true }).kind, "congestion");
  assert.equal(classifyOutcome(Object.assign(new Error("x"), { code: "ECONNREFUSED" })).kind, "congestion");
  assert.equal(
    classifyOutcome(new TypeError("fetch failed", { cause: { code: "ECONNRESET" } })).kind,
    "congestion",
  );
});

test("a 429 without a reset is congestion; with Retry-After or a rate-limit reset it is a quota pause", () => {
  assert.equal(classifyOutcome(429).kind, "congestion");
  assert.deepEqual(classifyOutcome({ status: 429, headers: { "retry-after": "2" } }), {
    kind: "quota",
    resetMs: 2000,
  });
  assert.deepEqual(classifyOutcome({ status: 429, retryAfterMs: 750 }), { kind: "quota", resetMs: 750 });
  assert.deepEqual(
    classifyOutcome({ status: 429, headers: new Headers({ "x-ratelimit-reset-requests": "6m0s" }) }),
    {
      kind: "quota",
      resetMs: 360_000,
    },
  );
});

test("the quota reset of a 429: retry-after-ms, the reset of the exhausted limit, or the IETF RateLimit header", () => {
  const reset = (headers: Record<string, string>) => {
    const o = classifyOutcome({ status: 429, headers });
    return o.kind === "quota" ? o.resetMs : undefined;
  };
  assert.equal(reset({ "retry-after-ms": "1500", "retry-after": "9" }), 1500);
  // OpenAI sends both resets: the limit that ran out is the one that throttled.
  const both = { "x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s" };
  assert.equal(
    reset({ ...both, "x-ratelimit-remaining-requests": "20", "x-ratelimit-remaining-tokens": "0" }),
    360_000,
  );
  assert.equal(
    reset({ ...both, "x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "9000" }),
    1000,
  );
  assert.equal(
    reset({ ...both, "x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "0" }),
    360_000,
  );
  assert.equal(reset({ "x-ratelimit-reset-tokens": "250ms" }), 250);
  assert.equal(reset({ ratelimit: '"default";r=0;t=30' }), 30_000);
  assert.equal(reset({ "ratelimit-reset": "12" }), 12_000);
  assert.equal(reset({ ratelimit: '"default";r=5' }), undefined, "no reset: plain congestion");
});

test("timeouts and opaque errors feed the breaker only; server answers like 400 or 500 are not overload", () => {
  assert.equal(
    classifyOutcome(Object.assign(new Error("t"), { code: "UND_ERR_HEADERS_TIMEOUT" })).kind,
    "failure",
  );
  assert.equal(classifyOutcome(new Error("socket hang up")).kind, "failure");
  assert.equal(classifyOutcome(400).kind, "success");
  assert.equal(classifyOutcome(500).kind, "success");
});

test("client aborts and sluice's own refusals are ignored", () => {
  assert.equal(classifyOutcome(new DOMException("aborted", "AbortError")).kind, "ignore");
  assert.equal(classifyOutcome(new QueueFullError("l", 1, 1, 1, 1, 1000)).kind, "ignore");
});
