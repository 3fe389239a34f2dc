/**
 * DESIGN §1 invariant on real sockets: no budget is ever above its limit. A burst twenty times
 * the lane's limit arrives at once; the pods (which would run far more) never see more than
 * their `max_inflight`, every answer is a 200 or a refusal with the right code, and the counts
 * balance: every 200 is one call the pods completed, every refusal one they never saw.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  type Answer,
  assertNothingLeft,
  assertRefusal,
  chat,
  type Stack,
  SUITE,
  startStack,
} from "./helpers.js";

const LANE_LIMIT = 4;
const POD_LIMIT = 2;
const BURST = 20 * LANE_LIMIT;
const PRIORITIES = ["interactive", "default", "bulk"] as const;

describe("a 20× burst", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      // Each sim would run 64 at once: only sluice keeps them at 2.
      sims: [
        { maxNumSeqs: 64, serviceMs: 3, tokensPerSecond: 0 },
        { maxNumSeqs: 64, serviceMs: 3, tokensPerSecond: 0, seed: 2 },
      ],
      config: (urls) => ({
        admission: { max_concurrency: 256 },
        models: [
          {
            name: "m",
            max_concurrent_requests: LANE_LIMIT,
            reserve: 1,
            queue_limit: 16,
            queue_timeout_s: 1,
            adaptive: { floor: 1 },
            pods: urls.map((url) => ({ url, max_inflight: POD_LIMIT })),
          },
        ],
      }),
    });
  });
  after(() => stack.close());

  for (const round of [1, 2, 3]) {
    test(`round ${round}: never more than max_inflight on a pod, and every call accounted for`, async (t) => {
      for (const sim of stack.sims) sim.resetStats();
      const answers: Answer[] = await Promise.all(
        Array.from({ length: BURST }, (_, i) =>
          chat(stack.url, "m", {
            content: `burst ${round} call ${i}`,
            headers: { "x-sluice-priority": PRIORITIES[i % 3]! },
            extra: { stream: i % 2 === 0 },
          }),
        ),
      );
      const byStatus = new Map<number, number>();
      for (const a of answers) {
        byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
        if (a.status === 429) assertRefusal(a, 429, "queue_full");
        else if (a.status === 503) assertRefusal(a, 503, "queue_timeout");
        else assert.equal(a.status, 200, `unexpected answer ${a.status}: ${a.text}`);
      }
      t.diagnostic(`answers by status: ${JSON.stringify(Object.fromEntries(byStatus))}`);
      const ok = byStatus.get(200) ?? 0;
      const refused = (byStatus.get(429) ?? 0) + (byStatus.get(503) ?? 0);
      assert.equal(ok + refused, BURST, `answers by status: ${JSON.stringify([...byStatus])}`);
      // How many are served depends on how fast this machine turns 80 arrivals around (the
      // first round also opens 80 connections, which spreads the arrivals); what never varies
      // is that the pods stay within their limits and every call is accounted for.
      assert.ok(ok >= 1, "the lane kept serving while it refused");

      const stats = stack.sims.map((s) => s.stats());
      for (const s of stats) {
        assert.ok(s.maxRunningSeen <= POD_LIMIT, `a pod ran ${s.maxRunningSeen} > ${POD_LIMIT}`);
        assert.equal(s.maxWaitingSeen, 0, "nothing ever waited inside a pod");
      }
      const completed = stats.reduce((n, s) => n + s.completed, 0);
      const receivedTotal = stats.reduce((n, s) => n + s.received, 0);
      assert.equal(completed, ok, "every 200 is one call a pod completed");
      assert.equal(receivedTotal, ok, "no refused call reached a pod");
      await assertNothingLeft(stack);
    });
  }

  test("interactive calls fare no worse than bulk ones under the burst", async () => {
    const answers = await Promise.all(
      Array.from({ length: BURST }, (_, i) =>
        chat(stack.url, "m", {
          content: `priority ${i}`,
          headers: { "x-sluice-priority": i % 2 === 0 ? "interactive" : "bulk" },
        }),
      ),
    );
    const served = (p: string) =>
      answers.filter((a) => a.status === 200 && a.headers["x-sluice-priority"] === p).length;
    assert.ok(
      served("interactive") >= served("bulk"),
      `interactive ${served("interactive")} < bulk ${served("bulk")}`,
    );
    await assertNothingLeft(stack);
  });
});
