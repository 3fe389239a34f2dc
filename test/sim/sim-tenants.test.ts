/**
 * The sim counts what it did per `x-sim-tenant` (a load profile's tenants, issue 24): completed
 * calls, their usage tokens, the slot time they held; a call whose client left is counted aborted.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { request } from "undici";
import { type SimServer, startSim } from "../../src/sim/server.js";
import { waitFor } from "../helpers/index.js";

let sim: SimServer;
before(async () => {
  sim = await startSim({ serviceMs: 40, jitterSigma: 0, defaultOutputTokens: 5, tokensPerSecond: 0 });
});
after(() => sim.close());

function chat(tenant: string | undefined, text: string, signal?: AbortSignal) {
  return request(`${sim.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(tenant ? { "x-sim-tenant": tenant } : {}) },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: text }], max_tokens: 3 }),
    ...(signal ? { signal } : {}),
  });
}

describe("sim: counts per x-sim-tenant", () => {
  test("completed calls, their usage and slot time by tenant; none without the header; a client that left is aborted", async () => {
    const answers = await Promise.all([
      chat("A", "one"),
      chat("A", "two"),
      chat("B", "three"),
      chat(undefined, "four"),
    ]);
    const usages = await Promise.all(
      answers.map(
        async (r) => (await r.body.json()) as { usage: { prompt_tokens: number; completion_tokens: number } },
      ),
    );
    const gone = new AbortController();
    const left = chat("B", "five", gone.signal).catch(() => undefined);
    // Leave once the sim runs the call (a fixed 10 ms could pass before it arrived, on a busy
    // machine: then the sim never saw it and nothing was aborted).
    await waitFor("the sim running the call", () => sim.stats().running === 1);
    gone.abort();
    await left;
    // The sim sees the close a moment later.
    await waitFor("the sim seeing the client leave", () => (sim.stats().tenants.B?.aborted ?? 0) > 0);
    const t = sim.stats().tenants;
    assert.deepEqual(Object.keys(t).sort(), ["A", "B"]);
    assert.equal(t.A!.completed, 2);
    assert.equal(t.A!.promptTokens, usages[0]!.usage.prompt_tokens + usages[1]!.usage.prompt_tokens);
    assert.equal(t.A!.completionTokens, 6);
    assert.equal(t.B!.completed, 1);
    assert.equal(t.B!.aborted, 1);
    assert.equal(t.B!.completionTokens, 3);
    // Each completed call held its slot for its 40 ms service time at least.
    assert.ok(t.A!.slotMs >= 2 * 39, `${t.A!.slotMs}`);
    assert.equal(sim.stats().completed, 4);
    sim.resetStats();
    assert.deepEqual(sim.stats().tenants, {});
  });
});
