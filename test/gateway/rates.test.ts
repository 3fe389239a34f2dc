/**
 * Token and request budgets through the gateway (issue 10), over real sockets against the
 * provider simulator (src/sim/provider.ts), with the gateway's Governor and the provider's
 * buckets on one ManualClock: reserve the estimate at the grant, reconcile with the answer's
 * usage (JSON, SSE, a stream without usage), refuse at once what can never fit or not in time,
 * `max_tokens` absent or absurd, the RateLimit headers, the interactive reserve bulk calls leave,
 * and an account paused by a provider 429 and resuming at the reset.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import pino from "pino";
import { parseConfig } from "../../src/config/schema.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { type Provider, type ProviderOptions, startProvider } from "../../src/sim/provider.js";
import { ManualClock } from "../../src/testing.js";
import { assertRefusal, call, chatBody, SUITE } from "./helpers.js";

interface Rig {
  clock: ManualClock;
  gateway: Gateway;
  url: string;
  provider: Provider;
  close(): Promise<void>;
}

const rigs: Rig[] = [];
after(async () => {
  for (const r of rigs) await r.close();
});

async function rig(
  provider: ProviderOptions,
  config: (url: string) => Record<string, unknown>,
): Promise<Rig> {
  const clock = new ManualClock();
  const p = await startProvider({ ...provider, now: () => clock.now() });
  const gateway = new Gateway({
    config: parseConfig(config(p.url)),
    logger: pino({ level: "silent" }),
    clock,
  });
  const url = await gateway.listen(0, "127.0.0.1");
  const r: Rig = {
    clock,
    gateway,
    url,
    provider: p,
    async close() {
      await gateway.close();
      await p.close();
    },
  };
  rigs.push(r);
  return r;
}

const model = (name: string, url: string, extra: Record<string, unknown> = {}) => ({
  name,
  max_concurrent_requests: 8,
  reserve: 0,
  queue_timeout_s: 10,
  adaptive: false,
  pods: [{ url, max_inflight: 8 }],
  ...extra,
});

const post = (url: string, model: string, content: string, extra: Record<string, unknown> = {}) =>
  call(url, "/v1/chat/completions", { body: chatBody(model, content, extra) });

const lane = (r: Rig, name = "m") => r.gateway.governor.snapshot().lanes.find((l) => l.lane === name)!;

describe("gateway: token budgets", SUITE, () => {
  test("a JSON answer's usage replaces the estimate: the bucket is charged what was used", async () => {
    const r = await rig({ completionRatio: 0.5 }, (url) => ({ models: [model("m", url, { tpm: 6000 })] }));
    const a = await post(r.url, "m", "hello there", { max_tokens: 400 });
    assert.equal(a.status, 200);
    const used = JSON.parse(a.text).usage.total_tokens as number;
    assert.ok(used < 400, `used ${used}: half of max_tokens and a short prompt`);
    assert.equal(lane(r).tokens!.available, 6000 - used, "refunded down to the real usage");
    assert.equal(lane(r).tokens!.used_1m, used);
    // The answer says how much is left, in the IETF and OpenAI forms.
    assert.match(String(a.headers["ratelimit-policy"]), /"lane-tokens";q=6000;w=60/);
    assert.match(String(a.headers.ratelimit), /"lane-tokens";r=\d+;t=\d+/);
    assert.equal(a.headers["x-ratelimit-limit-tokens"], "6000");
    assert.ok(
      !Array.isArray(a.headers["x-ratelimit-remaining-tokens"]),
      "the provider's own header is replaced",
    );
  });

  test("an SSE answer's final usage chunk reconciles; a stream without usage counts what it streamed", async () => {
    const r = await rig({ completionRatio: 0.25 }, (url) => ({ models: [model("m", url, { tpm: 60_000 })] }));
    const a = await post(r.url, "m", "hi", {
      stream: true,
      max_tokens: 2000,
      stream_options: { include_usage: true },
    });
    assert.equal(a.status, 200);
    const usage = /"usage":\{"prompt_tokens":(\d+),"completion_tokens":(\d+)/.exec(a.text)!;
    const used = Number(usage[1]) + Number(usage[2]);
    assert.equal(lane(r).tokens!.available, 60_000 - used);
    // Without include_usage the provider sends none: the gateway counts the streamed text (÷ 4).
    const b = await post(r.url, "m", "hi", { stream: true, max_tokens: 2000 });
    assert.equal(b.status, 200);
    assert.ok(!b.text.includes('"usage":{'));
    const charged = 60_000 - used - lane(r).tokens!.available;
    assert.ok(charged > 0 && charged < 2000, `charged ${charged}: what was streamed, not the 2000+ estimate`);
  });

  test("max_tokens absent reserves the model's default_max_tokens; absurd or above capacity is refused at once", async () => {
    const r = await rig({}, (url) => ({
      models: [model("m", url, { tpm: 5000, default_max_tokens: 6000 })],
    }));
    const absent = await post(r.url, "m", "hello");
    const e = assertRefusal(absent, 429, "rate_limit");
    assert.match(String(e.message), /60\d\d tokens: it exceeds the capacity/);
    assert.equal(absent.headers["retry-after"] !== undefined, true);
    const absurd = await post(r.url, "m", "hello", { max_tokens: 1_000_000_000 });
    assert.match(String(assertRefusal(absurd, 429, "rate_limit").message), /1000000\d+ tokens/);
    assert.equal(r.provider.stats().served, 0, "nothing reached the provider");
    assert.equal((await post(r.url, "m", "hello", { max_tokens: 100 })).status, 200);
  });

  test("one the refill cannot cover within the queue timeout is refused at once with Retry-After = the refill", async () => {
    const r = await rig({}, (url) => ({ models: [model("m", url, { tpm: 6000, queue_timeout_s: 10 })] }));
    assert.equal((await post(r.url, "m", "x", { max_tokens: 5900 })).status, 200); // ~100 left, 100/s
    const a = await post(r.url, "m", "x", { max_tokens: 3000 });
    const e = assertRefusal(a, 429, "rate_limit");
    assert.match(String(e.message), /cannot cover/);
    const retry = Number(a.headers["retry-after"]);
    assert.ok(retry >= 29 && retry <= 36, `Retry-After ${retry} s ≈ the 29 s refill (+ jitter)`);
    assert.equal(r.provider.stats().served, 1);
  });
});

describe("gateway: the interactive reserve of a token bucket", SUITE, () => {
  test("bulk traffic drains tpm down to the reserve; the next bulk call is refused, an interactive one is answered at once", async () => {
    // 1 slot of 8 kept for interactive callers keeps 1/8 of tpm: 1000 of 8000 tokens (133 a second).
    const r = await rig({}, (url) => ({
      models: [model("m", url, { reserve: 1, tpm: 8000, queue_timeout_s: 2 })],
    }));
    assert.equal(lane(r).tokens!.reserve, 1000);
    const bulk = { headers: { "x-sluice-priority": "bulk" } };
    const flood = (maxTokens: number) =>
      call(r.url, "/v1/chat/completions", { body: chatBody("m", "x", { max_tokens: maxTokens }), ...bulk });
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await flood(2300));
    for (const a of answers) assert.equal(a.status, 200);
    const left = lane(r).tokens!.available;
    // A bulk caller is told what it may still take: the level less the reserve it must leave.
    assert.equal(answers[2]!.headers["x-ratelimit-remaining-tokens"], String(Math.floor(left - 1000)));
    assert.ok(left >= 1000 && left < 1100, `bulk took the bucket to just above its reserve: ${left}`);
    // A bulk call of 500 must leave the 1000 kept: 500 + 1000 − left more tokens, past the 2 s bound.
    const refused = await flood(500);
    const e = assertRefusal(refused, 429, "rate_limit");
    assert.match(String(e.message), /leave the 1000 kept for interactive calls/);
    const retryS = Math.ceil(((1500 - left) * 60) / 8000);
    const retry = Number(refused.headers["retry-after"]);
    assert.ok(
      retry >= retryS && retry <= retryS + 2,
      `Retry-After ${retry} s ≈ the ${retryS} s refill to 500 + 1000`,
    );
    // The interactive call takes from the reserve at once: nothing waits, nothing is refused.
    const chat = await call(r.url, "/v1/chat/completions", {
      body: chatBody("m", "x", { max_tokens: 600 }),
      headers: { "x-sluice-priority": "interactive" },
    });
    assert.equal(chat.status, 200, chat.text);
    // An interactive caller may use the whole bucket, and is told so.
    assert.equal(chat.headers["x-ratelimit-remaining-tokens"], String(Math.floor(lane(r).tokens!.available)));
    assert.ok(lane(r).tokens!.available < 1000, "the reserve was used");
    assert.equal(r.provider.stats().served, 4);
  });
});

describe("gateway: an account as the provider sees it", SUITE, () => {
  test("a provider 429 with a reset pauses the whole account: the other model is refused at once, both resume at the reset", async () => {
    // The provider allows 12 requests a minute (one every 5 s); the gateway's account has no rpm
    // of its own, so it learns the limit from the provider's 429.
    const r = await rig({ rpm: 12 }, (url) => ({
      models: [model("a", url), model("b", url)],
      accounts: { prod: { max_inflight: 8, models: ["a", "b"] } },
    }));
    for (let i = 0; i < 12; i++) assert.equal((await post(r.url, "a", `q${i}`)).status, 200);
    const throttled = await post(r.url, "a", "one more");
    assert.equal(throttled.status, 429, "the provider's own 429 is passed through");
    assert.equal(throttled.headers["retry-after-ms"], "5000");
    const acct = () => r.gateway.governor.snapshot().accounts[0]!;
    assert.equal(acct().quota_paused_s, 5);
    assert.equal(acct().throttled_1m, 1);
    const b = await post(r.url, "b", "other model");
    const e = assertRefusal(b, 429, "quota_paused");
    assert.match(String(e.message), /account prod of lane b/);
    assert.equal(r.provider.stats().throttled.requests, 1, "the refused call never reached the provider");
    r.clock.advance(5000);
    assert.equal((await post(r.url, "b", "after the reset")).status, 200);
    assert.equal(acct().quota_paused_s, 0);
  });

  test("the account's own tpm across its models keeps the provider from ever answering 429", async () => {
    // A short queue timeout: on the manual clock a call that must wait for the refill is refused.
    const short = { queue_timeout_s: 0.5 };
    const r = await rig({ tpm: 3000 }, (url) => ({
      models: [model("a", url, short), model("b", url, short)],
      accounts: { prod: { tpm: 3000, models: ["a", "b"] } },
    }));
    let refused = 0;
    for (let i = 0; i < 20; i++) {
      const a = await post(r.url, i % 2 === 0 ? "a" : "b", "some prompt text", { max_tokens: 300 });
      if (a.status === 429) {
        assertRefusal(a, 429, "rate_limit");
        refused++;
      } else assert.equal(a.status, 200);
    }
    const s = r.provider.stats();
    assert.equal(s.throttled.tokens, 0, "no provider 429");
    assert.ok(refused > 0, "sluice said no itself");
    assert.ok(s.tokensServed <= 3000, `served ${s.tokensServed} tokens within the minute's 3000`);
  });
});
