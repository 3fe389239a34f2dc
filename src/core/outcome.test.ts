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
