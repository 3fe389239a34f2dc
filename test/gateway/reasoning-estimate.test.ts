/**
 * Seed 004: reasoning tokens are metered as output and raise a call's cost with no change in
 * request count (issue 25 item 7). A request that names a reasoning effort and no output bound
 * reserves `default_max_tokens` plus `models[].reasoning_tokens[effort]` (the largest listed for an
 * effort the config does not list); one that names `max_completion_tokens` has bounded its
 * reasoning already. Read at the bucket while each call is held at the pod.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseConfig } from "../../src/config/schema.js";
import { chat, model, type Stack, SUITE, startStack, waitFor } from "./helpers.js";
import { type RawPod, startRawPod } from "./raw-pod.js";

const TPM = 1_000_000;

describe("the estimate of a reasoning call", SUITE, () => {
  let pod: RawPod;
  let stack: Stack;
  const gates: (() => void)[] = [];

  before(async () => {
    pod = await startRawPod((_req, res) => {
      gates.push(() => {
        res.writeHead(200, { "content-type": "application/json" });
        // No usage: the estimate stays charged, so what was reserved can be read after the answer too.
        res.end('{"choices":[]}');
      });
    });
    stack = await startStack({
      sims: [],
      config: () => ({
        models: [
          model("r", [pod.url], {
            tpm: TPM,
            default_max_tokens: 1000,
            reasoning_tokens: { low: 2000, high: 20_000 },
          }),
        ],
      }),
    });
  });
  after(async () => {
    await stack.close();
    await pod.close();
  });

  /** Tokens the bucket lost to one call (its estimate), the call held at the pod meanwhile. */
  async function reserved(extra: Record<string, unknown>): Promise<number> {
    // What the bucket charged in the last minute: no refill blurs it, and no usage refunds it.
    const used = () => stack.gateway.governor.snapshot().lanes[0]!.tokens!.used_1m;
    const before = used();
    const answer = chat(stack.url, "r", { content: "x", extra });
    await waitFor("the call at the pod", () => gates.length === 1);
    const taken = used() - before;
    gates.shift()!();
    assert.equal((await answer).status, 200);
    return taken;
  }

  test("an effort with no output bound reserves default_max_tokens plus the effort's tokens", async () => {
    const plain = await reserved({});
    const high = await reserved({ reasoning_effort: "high" });
    const low = await reserved({ reasoning: { effort: "low" } }); // the Responses API's form
    const unknown = await reserved({ reasoning_effort: "extreme" });
    const bounded = await reserved({ reasoning_effort: "high", max_completion_tokens: 500 });
    // The prompt is the same few tokens in each (an effort's name is a setting, not prompt text).
    const near = (got: number, want: number) => Math.abs(got - want) < 5;
    assert.ok(near(high - plain, 20_000), `high reserved ${high - plain} more than no effort`);
    assert.ok(near(low - plain, 2000), `low reserved ${low - plain} more`);
    assert.ok(
      near(unknown - plain, 20_000),
      `an unlisted effort reserved ${unknown - plain} more, not the most listed`,
    );
    assert.ok(
      near(plain - bounded, 500),
      `max_completion_tokens 500 reserved ${bounded}, not ${plain - 500}`,
    );
  });

  test("reasoning_tokens is validated naming the key", () => {
    const pods = [{ url: "http://10.0.0.5:8000" }];
    assert.throws(
      () => parseConfig({ models: [{ name: "m", pods, reasoning_tokens: { high: -1 } }] }),
      /models\[0\]\.reasoning_tokens\.high/,
    );
    assert.throws(
      () => parseConfig({ models: [{ name: "m", pods, reasoning_tokens: { extreme: 5 } }] }),
      /models\[0\]\.reasoning_tokens\.extreme/,
    );
  });
});
