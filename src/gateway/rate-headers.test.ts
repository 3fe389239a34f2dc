import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { rateLimitHeaders } from "./rate-headers.js";

describe("RateLimit headers (rate-headers.ts)", () => {
  test("an IETF policy and limit per bucket, and OpenAI's headers for the tightest bucket of each unit", () => {
    const h = rateLimitHeaders([
      { scope: "lane", name: "chat", unit: "tokens", perMinute: 400_000, remaining: 390_000, resetMs: 1500 },
      {
        scope: "account",
        name: "prod",
        unit: "tokens",
        perMinute: 2_000_000,
        remaining: 12_000,
        resetMs: 359_000,
      },
      { scope: "account", name: "prod", unit: "requests", perMinute: 5000, remaining: 4990, resetMs: 120 },
    ]);
    assert.equal(
      h["ratelimit-policy"],
      '"lane-tokens";q=400000;w=60, "account-tokens";q=2000000;w=60, "account-requests";q=5000;w=60',
    );
    assert.equal(
      h.ratelimit,
      '"lane-tokens";r=390000;t=2, "account-tokens";r=12000;t=359, "account-requests";r=4990;t=1',
    );
    assert.deepEqual(
      [h["x-ratelimit-limit-tokens"], h["x-ratelimit-remaining-tokens"], h["x-ratelimit-reset-tokens"]],
      ["2000000", "12000", "5m59s"],
    );
    assert.deepEqual(
      [h["x-ratelimit-remaining-requests"], h["x-ratelimit-reset-requests"]],
      ["4990", "120ms"],
    );
    assert.deepEqual(rateLimitHeaders([]), {});
  });
});
