/**
 * DESIGN §3.1 step 6: a pod that refuses a call before starting it (connection refused, or a
 * status its config lists in `redispatch_statuses`) gets the call re-dispatched to another pod of
 * the lane — within a bounded number of attempts — so the client sees the healthy pod's answer.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertNothingLeft, chat, model, redispatchOn, type Stack, SUITE, startStack } from "./helpers.js";

const CALLS = 12;
/** At most this many upstream attempts per call (src/core/scheduler.ts MAX_ATTEMPTS). */
const MAX_ATTEMPTS = 3;
/**
 * Re-dispatch is a retry with a budget (DESIGN §1.3): a lane starts with 3 banked and each
 * success earns 0.1 more (at most 3). Each suite first sends calls while every pod is healthy,
 * so the budget is the steady-state one, not the fresh one.
 */
const WARM_UP = 31;

async function warmUp(stack: Stack): Promise<void> {
  for (let i = 0; i < WARM_UP; i++)
    assert.equal((await chat(stack.url, "m", { content: `warm ${i}` })).status, 200);
}

/** Upstream attempts across every sim. */
const attempts = (stack: Stack) => stack.sims.reduce((n, s) => n + s.stats().received, 0);

describe("re-dispatch away from a stopped pod", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [
        { maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 },
        { maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 },
      ],
      // A long cooldown: the stopped pod gets no half-open probe during the test.
      config: (urls) => ({
        models: [model("m", urls, { breaker: { base_cooldown_s: 60, max_cooldown_s: 60 } }, 2)],
      }),
    });
    await warmUp(stack);
    // The first pod (the one an idle lane picks first) goes away: its port refuses connections.
    await stack.sims[0]!.close();
    stack.sims[1]!.resetStats();
  });
  after(() => stack.close());

  test("every call succeeds through the other pod, each reaching it once", async () => {
    for (let i = 0; i < CALLS; i++) {
      const a = await chat(stack.url, "m", { content: `call ${i}` });
      assert.equal(a.status, 200, a.text);
      assert.equal(JSON.parse(a.text).object, "chat.completion");
    }
    assert.equal(stack.sims[1]!.stats().received, CALLS, "exactly one attempt reached the live pod per call");
    assert.equal(stack.sims[1]!.stats().completed, CALLS);
    const dead = stack.gateway.governor.snapshot().pods.find((p) => p.id === stack.sims[0]!.url)!;
    assert.equal(dead.breaker, "open", "the refusing pod's breaker tripped");
    await assertNothingLeft(stack);
  });
});

describe("re-dispatch away from a pod that answers 503", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [
        // Really runs one call and queues none: past that it answers 503 overloaded.
        { maxNumSeqs: 1, maxWaiting: 0, overflow: "503", serviceMs: 1, tokensPerSecond: 0 },
        { maxNumSeqs: 8, serviceMs: 5, tokensPerSecond: 0 },
      ],
      // sluice is told the first pod takes 4: it learns otherwise from its answers.
      // The first pod is a bare server: its 503 means it did not run the call (issue 21: opt-in).
      config: (urls) => ({
        models: [
          redispatchOn(
            [503],
            model("m", urls, { queue_limit: 16, breaker: { base_cooldown_s: 60, max_cooldown_s: 60 } }, 4),
          ),
        ],
      }),
    });
    await warmUp(stack);
    // Slow enough that the burst overlaps on the first pod, which then refuses.
    stack.sims[0]!.setProfile({ serviceMs: 200 });
  });
  after(() => stack.close());

  test("concurrent calls all succeed, and upstream attempts stay within the retry budget", async () => {
    const before = attempts(stack);
    const answers = await Promise.all(
      Array.from({ length: CALLS }, (_, i) => chat(stack.url, "m", { content: `call ${i}` })),
    );
    for (const a of answers) assert.equal(a.status, 200, a.text);
    const [flaky, healthy] = stack.sims.map((s) => s.stats());
    assert.ok(flaky!.refused > 0, "the first pod did refuse some calls");
    assert.equal(flaky!.completed + healthy!.completed, WARM_UP + CALLS, "each call completed once");
    const made = attempts(stack) - before;
    assert.equal(made, CALLS + flaky!.refused, "every extra attempt answers one refusal");
    assert.ok(made <= CALLS * MAX_ATTEMPTS, `${made} attempts for ${CALLS} calls`);
    // DESIGN §1.3: upstream attempts never exceed 1.1 × client requests.
    assert.ok(
      attempts(stack) <= 1.1 * (WARM_UP + CALLS),
      `${attempts(stack)} attempts for ${WARM_UP + CALLS} calls`,
    );
    assert.ok(flaky!.maxRunningSeen <= 1 && healthy!.maxRunningSeen <= 4);
    await assertNothingLeft(stack);
  });
});
