/**
 * The request side of the token path (issue 21): no header and no body shape lets a call past a
 * token budget, and a lane named by `X-Sluice-Model` is the model the pod runs. Counted at a fake
 * pod that bills what it served (billing-pod.ts) and holds each call 200 ms (so a burst's calls
 * run at once), with the gateway on a ManualClock so the bucket does not refill during a burst:
 * a call the bucket cannot cover within the short queue timeout is refused at once.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import pino from "pino";
import { parseConfig } from "../../src/config/schema.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { ManualClock } from "../../src/testing.js";
import { type BillingPod, startBillingPod } from "./billing-pod.js";
import { type Answer, assertBadInput, assertRefusal, call, SUITE } from "./helpers.js";

const TPM = 20_000;
const OUTPUT = 100;

interface Rig {
  gateway: Gateway;
  url: string;
  pod: BillingPod;
}

const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers) await close();
});

async function rig(
  models: (url: string) => Record<string, unknown>[],
  holdMs = 200,
  extra: Record<string, unknown> = {},
): Promise<Rig> {
  const pod = await startBillingPod({ holdMs });
  const gateway = new Gateway({
    config: parseConfig({ models: models(pod.url), ...extra }),
    logger: pino({ level: "silent" }),
    clock: new ManualClock(),
  });
  const url = await gateway.listen(0, "127.0.0.1");
  closers.push(async () => {
    await gateway.close();
    await pod.close();
  });
  return { gateway, url, pod };
}

/** A model on one pod; `tpm` with a queue timeout too short for the refill to cover a 5 000-token call. */
const model = (name: string, url: string, extra: Record<string, unknown> = {}) => ({
  name,
  max_concurrent_requests: 32,
  reserve: 0,
  queue_timeout_s: 0.5,
  adaptive: false,
  pods: [{ url, max_inflight: 32 }],
  ...extra,
});

/** About 5 000 tokens of English (o200k_base). */
const PROSE = "The quick brown fox jumps over the lazy dog near the river bank. ".repeat(370);

const post = (url: string, body: unknown, headers: Record<string, string> = {}, type = "application/json") =>
  call(url, "/v1/chat/completions", {
    body: typeof body === "string" ? body : JSON.stringify(body),
    headers: { "content-type": type, ...headers },
  });

/** Twenty calls at once; the pod's bill must stay within the budget plus one call's output bound. */
async function burst(r: Rig, send: () => Promise<Answer>): Promise<Answer[]> {
  const answers = await Promise.all(Array.from({ length: 20 }, send));
  for (const a of answers) if (a.status !== 200) assertRefusal(a, 429, "rate_limit");
  const served = answers.filter((a) => a.status === 200).length;
  assert.equal(r.pod.calls.length, served, "every 200 was served by the pod, every 429 never reached it");
  const perCall = r.pod.calls[0]!.prompt + OUTPUT;
  assert.ok(perCall > 4500, `each call bills ~5 000 tokens: ${perCall}`);
  assert.ok(
    r.pod.billed() <= TPM + OUTPUT,
    `the pod billed ${r.pod.billed()} tokens for ${served} calls: at most tpm ${TPM} + one output bound`,
  );
  assert.ok(
    served >= 1 && served <= Math.floor(TPM / perCall),
    `${served} calls of ~${perCall} tokens fit in ${TPM}`,
  );
  return answers;
}

describe("a token budget holds whatever the client sends", SUITE, () => {
  test("X-Sluice-Model does not switch it off: the body is read and estimated", async () => {
    const r = await rig((url) => [model("m", url, { tpm: TPM })]);
    // The header names the lane; the body names no model (the header's usual use).
    await burst(r, () =>
      post(
        r.url,
        { messages: [{ role: "user", content: PROSE }], max_tokens: OUTPUT },
        { "x-sluice-model": "m" },
      ),
    );
  });

  test("input outside messages counts: the same 5 000 tokens in a tool's description", async () => {
    const r = await rig((url) => [model("m", url, { tpm: TPM })]);
    const tool = {
      type: "function",
      function: { name: "lookup", description: PROSE, parameters: { type: "object" } },
    };
    await burst(r, () =>
      post(r.url, {
        model: "m",
        messages: [{ role: "user", content: "hi" }],
        tools: [tool],
        max_tokens: OUTPUT,
      }),
    );
  });

  test("a body that is not JSON on a metered lane named by header is estimated by its size", async () => {
    const r = await rig((url) => [model("m", url, { tpm: TPM, default_max_tokens: OUTPUT })]);
    // 19 600 bytes of text: 4 900 tokens by bytes ÷ 4, as the pod bills it.
    await burst(r, () => post(r.url, PROSE.slice(0, 19_600), { "x-sluice-model": "m" }, "text/plain"));
  });
});

describe("a route on a token budget's path", SUITE, () => {
  test("its upload is read for the estimate (bytes ÷ 4), where it used to stream through at 0 tokens", async () => {
    const r = await rig((url) => [model("m", url, { tpm: TPM, default_max_tokens: OUTPUT })], 200, {
      routes: [{ match: "/ocr/", model: "m" }],
    });
    await burst(r, () =>
      call(r.url, "/ocr/v1/read", {
        body: PROSE.slice(0, 19_600),
        headers: { "content-type": "application/octet-stream" },
      }),
    );
  });
});

describe("the lane comes from one source", SUITE, () => {
  test("X-Sluice-Model small with body.model big is refused 400 naming both; big never runs twice at the pod", async () => {
    // One server behind both names: big may run one call at a time, small eight.
    const r = await rig(
      (url) => [
        model("big", url, {
          max_concurrent_requests: 1,
          queue_limit: 8,
          queue_timeout_s: 10,
          pods: [{ url, max_inflight: 8 }],
        }),
        model("small", url, {
          max_concurrent_requests: 8,
          queue_timeout_s: 10,
          pods: [{ url, max_inflight: 8 }],
        }),
      ],
      300,
    );
    const body = { model: "big", messages: [{ role: "user", content: "hello" }] };
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => post(r.url, body, { "x-sluice-model": "small" })),
    );
    assert.ok((r.pod.peak.get("big") ?? 0) <= 1, `${r.pod.peak.get("big")} big calls ran at once at the pod`);
    for (const a of answers) {
      const e = assertBadInput(a, 400, "bad_request");
      assert.equal(e.param, "header:x-sluice-model,body.model");
      assert.match(String(e.message), /X-Sluice-Model names "small" but body.model names "big"/);
    }
    assert.equal(r.pod.peak.get("big") ?? 0, 0, "nothing counted on the wrong lane reached the pod");
    // The same calls naming big in both places (or only in the body) queue on big's one slot.
    const agreed = await Promise.all([
      ...Array.from({ length: 3 }, () => post(r.url, body, { "x-sluice-model": "big" })),
      ...Array.from({ length: 3 }, () => post(r.url, body)),
    ]);
    for (const a of agreed) assert.equal(a.status, 200, a.text);
    assert.equal(r.pod.peak.get("big"), 1, "never more than one big at the pod");
    assert.equal(r.pod.calls.length, 6);
    // A body whose model the scan cannot read plainly is parsed: the escaped name is still "big".
    const escaped = await post(r.url, '{"model":"b\\u0069g","messages":[]}', { "x-sluice-model": "small" });
    assert.match(String(assertBadInput(escaped, 400, "bad_request").message), /body.model names "big"/);
  });
});
