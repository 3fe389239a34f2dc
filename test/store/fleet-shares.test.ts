/**
 * The outage share rule (`FleetShares.allowance`, docs/fleet.md "When Redis goes away") checked
 * exhaustively on small fleets: when every replica heard the others' counts as they were, however
 * the calls were spread, the replicas together never hold more than the limit while Redis is
 * away — each keeps what it held or grows to its allowance, whichever is more — as long as the
 * fleet runs no more replicas than `expected_replicas` and the limit is at least that many. And
 * the allowances are not all zero when the fleet holds nothing (the outage still serves).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FleetShares } from "../../src/store/redis/shares.js";

/** Every way of spreading at most `limit` calls over `replicas` replicas. */
function* spreads(replicas: number, limit: number): Generator<number[]> {
  if (replicas === 0) {
    yield [];
    return;
  }
  for (let first = 0; first <= limit; first++)
    for (const rest of spreads(replicas - 1, limit - first)) yield [first, ...rest];
}

/** What replica `i` would allow itself when it heard `held` exactly (no counts since). */
function allowanceOf(held: readonly number[], i: number, expected: number, limit: number): number {
  const shares = new FleetShares(
    expected,
    1000,
    () => {},
    () => {},
  );
  const others = held.filter((_, j) => j !== i);
  // What a heartbeat answers: the other replicas holding calls, one count each.
  shares.heard(["k"], [others.filter((c) => c > 0)], [], 0);
  return shares.allowance(
    "k",
    limit,
    others.reduce((a, b) => a + b, 0),
  );
}

describe("local shares from what was last heard", () => {
  for (const expected of [2, 3, 4]) {
    test(`${expected} replicas (expected_replicas ${expected}): never above the limit, whatever each held`, () => {
      for (let limit = expected; limit <= 9; limit++) {
        let checked = 0;
        for (const running of [expected - 1, expected]) {
          for (const held of spreads(running, limit)) {
            const most = held.map((h, i) => Math.max(h, allowanceOf(held, i, expected, limit)));
            const total = most.reduce((a, b) => a + b, 0);
            assert.ok(total <= limit, `limit ${limit}, held ${held}: together up to ${most} = ${total}`);
            checked++;
          }
        }
        assert.ok(checked > 0);
        const idle = allowanceOf(new Array(expected).fill(0), 0, expected, limit);
        assert.equal(idle, Math.floor(limit / expected), `limit ${limit}, nothing held: ⌊L ÷ N⌋ each`);
      }
    });
  }

  test("the issue's case: one replica held all 6 of 3 — the others get 0, it keeps its calls and regrows to 2", () => {
    assert.equal(allowanceOf([6, 0, 0], 1, 3, 6), 0);
    assert.equal(allowanceOf([6, 0, 0], 2, 3, 6), 0);
    assert.equal(allowanceOf([6, 0, 0], 0, 3, 6), 2);
    // Before: each limit ÷ 3 = 2 whatever was held, so 6 + 2 + 2 = 10 at the pod.
  });

  test("what the others gained since the heartbeat counts on top (a fresher grant answer)", () => {
    const shares = new FleetShares(
      3,
      1000,
      () => {},
      () => {},
    );
    shares.heard(["k"], [[1]], [], 0); // the heartbeat: one other replica held 1
    assert.equal(shares.allowance("k", 6, 1), 2, "as heard: 6 − max(1, 2) − 2 = 2");
    assert.equal(shares.allowance("k", 6, 4), 0, "3 more since, seen in a grant's answer: 6 − 2 − 2 − 3 < 0");
  });
});
