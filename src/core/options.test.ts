/**
 * The library path of the one config pipeline: `resolveGovernorOptions` validates once, naming
 * path, expectation and value, and applies every default from `DEFAULTS`; resolved options pass
 * through untouched (the gateway's, already validated by its schema, are never checked twice).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEFAULTS } from "./defaults.js";
import { ConfigError } from "./errors.js";
import { type GovernorOptions, isResolvedOptions, resolveGovernorOptions, resolveLane } from "./options.js";

function refused(options: unknown): ConfigError {
  try {
    resolveGovernorOptions(options as GovernorOptions);
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected a ConfigError, got ${String(e)}`);
    return e;
  }
  return assert.fail("expected the options to be refused");
}

describe("resolveGovernorOptions", () => {
  test("applies every default from DEFAULTS", () => {
    const o = resolveGovernorOptions({
      lanes: { chat: { pods: [{ id: "p0", maxInflight: 6 }] } },
      keys: { k: { maxInflight: 2 } },
    });
    assert.deepEqual(o.lanes.chat, {
      limit: 6,
      reserve: DEFAULTS.lane.reserve,
      queueLimit: DEFAULTS.lane.queueLimitPerSlot * 6,
      queueTimeoutMs: DEFAULTS.lane.queueTimeoutMs,
      agingMs: DEFAULTS.lane.agingMs,
      groups: [],
      pods: [{ id: "p0", maxInflight: 6 }],
      adaptive: { floor: DEFAULTS.adaptive.floor },
      breaker: { ...DEFAULTS.breaker },
      fallback: undefined,
      maxQuotaPauseMs: DEFAULTS.quota.maxPauseMs,
    });
    assert.equal(o.defaults.limit, DEFAULTS.lane.limit, "a lane created on first use is pass-through");
    assert.deepEqual(o.keys.k, { maxInflight: 2, maxPriority: DEFAULTS.key.maxPriority });
  });

  test("keeps the options it does not resolve (clock, random) as given", () => {
    const random = () => 0.5;
    assert.equal(resolveGovernorOptions({ random }).random, random);
  });

  const cases: { name: string; options: unknown; path: string; expected: RegExp; received: unknown }[] = [
    {
      name: "a backoff factor below 1",
      options: { lanes: { chat: { limit: 2, breaker: { backoffFactor: 0.5 } } } },
      path: "lanes.chat.breaker.backoffFactor",
      expected: /^a number ≥ 1$/,
      received: 0.5,
    },
    {
      name: "an unknown breaker option (it would change nothing)",
      options: { lanes: { chat: { limit: 2, breaker: { cooldownMs: 100 } } } },
      path: "lanes.chat.breaker.cooldownMs",
      expected: /^one of enabled, failThreshold, baseCooldownMs, maxCooldownMs, backoffFactor$/,
      received: "cooldownMs",
    },
    {
      name: "a breaker switch that is not a boolean",
      options: { lanes: { chat: { limit: 2, breaker: { enabled: "no" } } } },
      path: "lanes.chat.breaker.enabled",
      expected: /^true or false$/,
      received: "no",
    },
    {
      name: "an unknown adaptive option",
      options: { lanes: { chat: { limit: 2, adaptive: { ceiling: 8 } } } },
      path: "lanes.chat.adaptive.ceiling",
      expected: /^one of floor$/,
      received: "ceiling",
    },
    {
      name: "a random that is not a function",
      options: { random: 0.5 },
      path: "random",
      expected: /^a function/,
      received: 0.5,
    },
    {
      name: "a queue timeout past Node's longest timer (its timer would fire at once)",
      options: { lanes: { chat: { limit: 2, queueTimeoutMs: 1e12 } } },
      path: "lanes.chat.queueTimeoutMs",
      expected: /at most 2147483647/,
      received: 1e12,
    },
    {
      name: "a fallback to an unknown lane",
      options: { lanes: { chat: { limit: 2, fallback: "nope" } } },
      path: "lanes.chat.fallback",
      expected: /another configured lane/,
      received: "nope",
    },
  ];
  for (const c of cases) {
    test(`refuses ${c.name}, naming ${c.path}`, () => {
      const e = refused(c.options);
      assert.equal(e.path, c.path);
      assert.match(e.expected, c.expected);
      assert.deepEqual(e.received, c.received);
    });
  }

  test("returns resolved options as they are, and resolves a resolved lane to a copy without checking it", () => {
    const o = resolveGovernorOptions({ lanes: { chat: { limit: 2 } } });
    assert.ok(isResolvedOptions(o));
    assert.equal(resolveGovernorOptions(o), o);
    const lane = resolveLane(o.lanes.chat, {}, "lanes.chat", {});
    assert.deepEqual(lane, o.lanes.chat);
    assert.notEqual(lane, o.lanes.chat);
  });

  test("a spread copy of resolved options is not resolved: edited, it is validated like any options", () => {
    const o = resolveGovernorOptions({ lanes: { chat: { limit: 2 } } });
    assert.equal(isResolvedOptions({ ...o }), false);
    const { groups, ...lane } = o.lanes.chat!;
    const e = refused({ lanes: { chat: { ...lane, group: groups, limit: -1 } } });
    assert.equal(e.path, "lanes.chat.limit");
  });
});
