/**
 * Issue 10's "done when", across a fleet: two `Gateway`s on one Redis, both in front of one
 * provider simulator whose account allows N tokens per minute, with `accounts.sim.tpm: N`. A mixed
 * workload of small and large chat calls, offered through both gateways at several times N, gets
 * no provider 429 and stays under N per minute — judged by what the provider counted, not by the
 * gateways. With one bucket per gateway instead of one for the fleet, the two would have let
 * through up to twice the provider's allowance (the workload offers more than that).
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import pino from "pino";
import { Agent, request } from "undici";
import { parseConfig } from "../../src/config/schema.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { type Provider, startProvider } from "../../src/sim/provider.js";
import { Mulberry32 } from "../../src/sim/random.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const N = 6000; // the account's tokens per minute: 100 per second
const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

interface Call {
  at: number;
  content: string;
  maxTokens: number;
}

/** Small classifications and large summaries (seed 004): 1 in 4 is large, 10× the tokens. */
function workload(count: number, spreadMs: number): Call[] {
  const rnd = new Mulberry32(7);
  const words = ["alpha", "beta", "gamma", "delta", "omega", "signal", "budget", "token", "queue"];
  const text = (n: number) =>
    Array.from({ length: n }, () => words[Math.floor(rnd.next() * words.length)]).join(" ");
  return Array.from({ length: count }, (_, i) => {
    const large = i % 4 === 3;
    return {
      at: (i * spreadMs) / count,
      content: text(large ? 600 : 60),
      maxTokens: large ? 400 : 40,
    };
  });
}

async function gatewayOn(prefix: string, provider: Provider): Promise<string> {
  const config = parseConfig({
    store: REDIS_URL,
    fleet: { prefix },
    admission: { max_concurrency: 64, max_queued: 256 },
    models: [
      {
        name: "gpt-sim",
        max_concurrent_requests: 32,
        queue_limit: 128,
        queue_timeout_s: 2,
        adaptive: false,
        pods: [{ url: provider.url, max_inflight: 32 }],
      },
    ],
    accounts: { sim: { tpm: N, models: ["gpt-sim"] } },
  });
  const gateway = new Gateway({ config, logger: pino({ level: "silent" }) });
  const url = await gateway.listen(0, "127.0.0.1");
  closers.push(() => gateway.close());
  return url;
}

describe("a provider account across two gateways on one Redis", () => {
  test("a mixed workload through both gets no provider 429 and stays under the account's tpm", async (t) => {
    const redis = await redisOrSkip(t);
    if (redis === null) return;
    redis.disconnect();
    const providerStart = performance.now();
    const provider = await startProvider({
      tpm: N,
      serviceMs: 20,
      msPerOutputToken: 0.2,
      completionRatio: 0.7,
    });
    closers.push(() => provider.close());
    const prefix = uniquePrefix();
    const urls = [await gatewayOn(prefix, provider), await gatewayOn(prefix, provider)];
    const agent = new Agent({ connections: 128 });
    closers.push(() => agent.close());

    const calls = workload(48, 1500);
    const answers = { ok: [0, 0], sluice429: 0, other: 0, provider429: 0 };
    const started = performance.now();
    await Promise.all(
      calls.map(async (c, i) => {
        const wait = started + c.at - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const res = await request(`${urls[i % 2]}/v1/chat/completions`, {
          method: "POST",
          dispatcher: agent,
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: "gpt-sim",
            messages: [{ role: "user", content: c.content }],
            max_tokens: c.maxTokens,
          }),
        });
        const text = await res.body.text();
        if (res.statusCode === 200) answers.ok[i % 2]!++;
        else if (res.statusCode === 429 && text.includes("sluice")) answers.sluice429++;
        else if (res.statusCode === 429) answers.provider429++;
        else answers.other++;
      }),
    );

    const stats = provider.stats();
    const lastArrival = Math.max(...stats.log.map((e) => e.at));
    // The most a meter of N per minute allows from its start to the last call it served.
    const allowed = N + (N * (lastArrival - providerStart)) / 60_000;
    t.diagnostic(
      `provider: ${stats.served} served, ${stats.tokensServed} tokens (allowed ${allowed.toFixed(0)}), ` +
        `429s ${JSON.stringify(stats.throttled)}; gateways: ${answers.ok.join("+")} ok, ` +
        `${answers.sluice429} refused by sluice, ${answers.other} other`,
    );
    assert.deepEqual(stats.throttled, { tokens: 0, requests: 0, inflight: 0 }, "no provider 429");
    assert.equal(answers.provider429, 0);
    assert.ok(stats.tokensServed <= allowed, `${stats.tokensServed} tokens served, allowed ${allowed}`);
    assert.ok(answers.ok[0]! > 0 && answers.ok[1]! > 0, "both gateways served calls");
    assert.ok(answers.sluice429 + answers.other > 0, "the budget was binding: sluice held some back");
    assert.ok(stats.tokensServed > N / 2, `the fleet used the account: ${stats.tokensServed} tokens served`);
  });
});
