/**
 * Every error sluice raises on purpose, from one table (STYLE G5, after undici's test/errors.js):
 * its code (equal to the gateway's refusal code), HTTP status, name, that `instanceof` and the
 * guard agree, that a second package copy's error (same brand and code, another class) is still
 * recognised, and that the message carries the numbers (STYLE G6).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  BreakerOpenError,
  CAPACITY_REFUSAL_CODES,
  ConfigError,
  isBreakerOpenError,
  isConfigError,
  isKeyLimitError,
  isQueueFullError,
  isQueueTimeoutError,
  isQuotaPausedError,
  isRateLimitError,
  isSluiceError,
  KeyLimitError,
  QueueFullError,
  QueueTimeoutError,
  QuotaPausedError,
  RateLimitError,
  SluiceError,
  StoreUnavailableError,
  TimeoutError,
} from "./errors.js";

const table = [
  {
    error: new QueueFullError("chat", 4, 8, 8, 4, 2500, "full"),
    cls: QueueFullError,
    guard: isQueueFullError,
    code: "queue_full",
    status: 429,
    numbers: ["4 in flight", "8/8", "2500"],
  },
  {
    // A default call refused with one slot free: that slot is the interactive reserve, and it says so.
    error: new QueueFullError("chat", 15, 32, 32, 16, 1000, "full", 1),
    cls: QueueFullError,
    guard: isQueueFullError,
    code: "queue_full",
    status: 429,
    numbers: ["15/16 in flight", "the free slot is the interactive reserve", "32/32"],
  },
  {
    error: new QueueTimeoutError("chat", 30_000, 3, 1000),
    cls: QueueTimeoutError,
    guard: isQueueTimeoutError,
    code: "queue_timeout",
    status: 503,
    numbers: ["30000", "3"],
  },
  {
    error: new KeyLimitError("team-a", 2, 1, 3, 1000),
    cls: KeyLimitError,
    guard: isKeyLimitError,
    code: "key_limit",
    status: 429,
    numbers: ["team-a", "3"],
  },
  {
    error: new BreakerOpenError("chat", "http://pod:8000", 4000),
    cls: BreakerOpenError,
    guard: isBreakerOpenError,
    code: "upstream_unavailable",
    status: 503,
    numbers: ["4000"],
  },
  {
    error: new QuotaPausedError("chat", 2, 7000),
    cls: QuotaPausedError,
    guard: isQuotaPausedError,
    code: "quota_paused",
    status: 429,
    numbers: ["(2)", "7000"],
  },
  {
    error: new QuotaPausedError("chat", 2, 9000, "openai-prod"),
    cls: QuotaPausedError,
    guard: isQuotaPausedError,
    code: "quota_paused",
    status: 429,
    numbers: ["account openai-prod", "9000"],
  },
  {
    error: new RateLimitError(
      "chat",
      "openai-prod",
      "tokens",
      90_000,
      60_000,
      41_250,
      60_000,
      "exceeds_capacity",
    ),
    cls: RateLimitError,
    guard: isRateLimitError,
    code: "rate_limit",
    status: 429,
    numbers: ["90000 tokens", "60000 tokens/min", "41250 available", "60000 ms"],
  },
  {
    error: new RateLimitError("chat", "chat", "requests", 1, 100, 0, 1800, "cannot_cover_in_time"),
    cls: RateLimitError,
    guard: isRateLimitError,
    code: "rate_limit",
    status: 429,
    numbers: ["1 requests", "100 requests/min", "0 available", "1800 ms"],
  },
  {
    // A bulk call that must leave the bucket's interactive reserve: the reserve is in the message.
    error: new RateLimitError(
      "chat",
      "chat",
      "tokens",
      5000,
      60_000,
      1000,
      25_000,
      "cannot_cover_in_time",
      20_000,
    ),
    cls: RateLimitError,
    guard: isRateLimitError,
    code: "rate_limit",
    status: 429,
    numbers: ["5000 tokens", "20000 kept for interactive calls", "1000 available", "25000 ms"],
  },
  {
    error: new StoreUnavailableError("redis down"),
    cls: StoreUnavailableError,
    guard: isSluiceError,
    code: "store_unavailable",
    status: 503,
    numbers: ["redis down"],
  },
  {
    error: new ConfigError("lanes.chat.reserve", "a whole number ≥ 0", -1),
    cls: ConfigError,
    guard: isConfigError,
    code: "config_invalid",
    status: 500,
    numbers: ["lanes.chat.reserve", "-1"],
  },
] as const;

describe("errors, from one table", () => {
  for (const row of table) {
    test(`${row.cls.name}: code ${row.code}, status ${row.status}, instanceof and guard agree, numbers in the message`, () => {
      const e = row.error as SluiceError;
      assert.equal(e.code, row.code);
      assert.equal(e.httpStatus, row.status);
      assert.equal(e.name, row.cls.name);
      assert.ok(e instanceof row.cls && e instanceof SluiceError && e instanceof Error);
      assert.ok((row.guard as (x: unknown) => boolean)(e));
      for (const n of row.numbers) assert.ok(e.message.includes(n), `"${e.message}" carries ${n}`);
      // Another copy of the package: same brand and code, a different class object.
      const foreign = Object.assign(Object.create(Error.prototype), {
        code: row.code,
        [Symbol.for("sluice.error")]: true,
      });
      assert.ok(foreign instanceof row.cls, "recognised across package copies");
      for (const other of table)
        if (other.code !== row.code) assert.ok(!(e instanceof other.cls), `not a ${other.cls.name}`);
    });
  }

  test("the capacity refusal codes are every refusal class's code (429 or 503) and draining, each once", () => {
    const refusals = table.filter((row) => row.status === 429 || row.status === 503).map((row) => row.code);
    assert.deepEqual(
      [...new Set(CAPACITY_REFUSAL_CODES)].sort(),
      [...new Set([...refusals, "draining"])].sort(),
    );
    assert.equal(new Set(CAPACITY_REFUSAL_CODES).size, CAPACITY_REFUSAL_CODES.length);
  });

  test("a queue timeout is a TimeoutError; a plain Error is no SluiceError", () => {
    assert.ok(new QueueTimeoutError("chat", 1, 1, 1000) instanceof TimeoutError);
    assert.ok(!isSluiceError(new Error("x")) && !(new Error("x") instanceof SluiceError));
  });
});
