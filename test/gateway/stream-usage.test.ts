/**
 * Issue 21 defect 2: a metered stream is reconciled with what the provider billed, counted at the
 * provider. The gateway asks for the stream's usage (`stream_options.include_usage`) when the
 * client did not, and the client still gets exactly the stream it asked for (byte-identical to
 * the provider's own answer without the option). A provider that never sends usage is charged
 * all the text it generated — tool-call arguments and reasoning too, not only `content`.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, describe, test } from "node:test";
import pino from "pino";
import { request } from "undici";
import { parseConfig } from "../../src/config/schema.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { type Provider, startProvider } from "../../src/sim/provider.js";
import { ManualClock } from "../../src/testing.js";
import { chatBody, SUITE } from "./helpers.js";
import { startRawPod } from "./raw-pod.js";

const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

async function gatewayFor(
  url: string,
  extra: Record<string, unknown> = {},
): Promise<{ gateway: Gateway; url: string }> {
  const gateway = new Gateway({
    config: parseConfig({
      models: [
        {
          name: "m",
          max_concurrent_requests: 8,
          reserve: 0,
          adaptive: false,
          tpm: 1_000_000,
          pods: [{ url, max_inflight: 8 }],
          ...extra,
        },
      ],
    }),
    logger: pino({ level: "silent" }),
    // Time stands still: no refill pays back a reservation before its reconcile, so used_1m is
    // exactly what the reconciles charged.
    clock: new ManualClock(),
  });
  const at = await gateway.listen(0, "127.0.0.1");
  closers.push(() => gateway.close());
  return { gateway, url: at };
}

async function post(url: string, body: string): Promise<{ status: number; text: string; type: string }> {
  const res = await request(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  return { status: res.statusCode, text: await res.body.text(), type: String(res.headers["content-type"]) };
}

const usedOf = (gateway: Gateway) =>
  gateway.governor.snapshot().lanes.find((l) => l.lane === "m")!.tokens!.used_1m;

describe("a provider that sends usage only when asked (OpenAI)", SUITE, () => {
  let provider: Provider;

  test("the gateway asks, charges what the provider billed, and the client sees its own stream", async () => {
    provider = await startProvider({ completionRatio: 0.5 });
    closers.push(() => provider.close());
    const { gateway, url } = await gatewayFor(provider.url);
    const bodies = Array.from({ length: 6 }, (_, i) =>
      chatBody("m", `stream ${i} ${"words ".repeat(i * 40)}`, { stream: true, max_tokens: 300 + 97 * i }),
    );
    // The provider's own answers to the client's bodies, straight: what the client must see.
    const direct = [];
    for (const body of bodies) direct.push(await post(provider.url, body));
    const billedDirect = provider.stats().tokensServed;
    for (const [i, body] of bodies.entries()) {
      const a = await post(url, body);
      assert.equal(a.status, 200);
      assert.equal(a.type, direct[i]!.type);
      assert.equal(a.text, direct[i]!.text, `call ${i}: byte-identical to the provider's own stream`);
      assert.ok(!a.text.includes('"usage"'), "no usage the client did not ask for");
    }
    const billed = provider.stats().tokensServed - billedDirect;
    assert.equal(usedOf(gateway), billed, "used_1m is what the provider billed, to the token");
  });

  test("a client that asked for usage gets it, untouched, and is charged the same", async () => {
    const { gateway, url } = await gatewayFor(provider.url);
    const body = chatBody("m", "asked", {
      stream: true,
      max_tokens: 500,
      stream_options: { include_usage: true },
    });
    const direct = await post(provider.url, body);
    const before = provider.stats().tokensServed;
    const a = await post(url, body);
    assert.equal(a.text, direct.text);
    assert.match(a.text, /"usage":\{"prompt_tokens"/);
    assert.equal(usedOf(gateway), provider.stats().tokensServed - before);
  });
});

/**
 * A provider that streams tool calls, reasoning or a refusal and never sends usage (it ignores
 * `stream_options`), billing prompt + generated characters ÷ 4 — so that is what the gateway's
 * count must come to.
 */
async function startToolProvider(): Promise<{ url: string; billed: () => number; close(): Promise<void> }> {
  let billed = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { messages: { content: string }[] };
      const kind = body.messages[0]!.content;
      const ev = (delta: unknown) =>
        `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
      res.writeHead(200, { "content-type": "text/event-stream" });
      let chars = 0;
      let out = ev({ role: "assistant", content: null });
      for (let i = 0; i < 200; i++) {
        const piece = `${"abcdefgh".repeat(5)}${i}`.slice(0, 40);
        chars += piece.length;
        if (kind === "tools") out += ev({ tool_calls: [{ index: 0, function: { arguments: piece } }] });
        else if (kind === "reasoning") out += ev({ reasoning_content: piece });
        else out += ev({ refusal: piece });
      }
      out += "data: [DONE]\n\n";
      billed += 10 + Math.ceil(chars / 4); // a 10-token prompt
      res.end(out);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    billed: () => billed,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("a provider that never sends usage", SUITE, () => {
  test("tool-call, reasoning and refusal streams are charged their generated text, not refunded", async () => {
    const provider = await startToolProvider();
    closers.push(() => provider.close());
    const { gateway, url } = await gatewayFor(provider.url);
    for (const kind of ["tools", "reasoning", "refusal", "tools", "reasoning", "refusal"]) {
      const a = await post(url, chatBody("m", kind, { stream: true, max_tokens: 4000 }));
      assert.equal(a.status, 200);
    }
    const used = usedOf(gateway);
    const billed = provider.billed();
    // Each call generated 8,000 characters (2,000 tokens at ÷ 4); the prompt estimate is sluice's own.
    assert.ok(Math.abs(used - billed) <= 0.05 * billed, `used_1m ${used} within 5 % of the ${billed} billed`);
  });
});

describe("ask_stream_usage: false (a server that refuses stream_options)", SUITE, () => {
  test("the pod receives the client's bytes as sent; the stream is charged its text", async () => {
    const pod = await startRawPod((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(`data: {"choices":[{"delta":{"content":"${"w".repeat(400)}"}}]}\n\ndata: [DONE]\n\n`);
    });
    closers.push(() => pod.close());
    const { gateway, url } = await gatewayFor(pod.url, { ask_stream_usage: false });
    const body = chatBody("m", "as sent", { stream: true, max_tokens: 3000 });
    const a = await post(url, body);
    assert.equal(a.status, 200);
    assert.equal(pod.calls[0]!.body, body, "forwarded untouched");
    // The prompt's estimate (a few tokens) plus 400 characters ÷ 4, not the 3000-token bound.
    const used = usedOf(gateway);
    assert.ok(used >= 100 && used < 120, `used_1m ${used}`);
    const { url: asking } = await gatewayFor(pod.url);
    await post(asking, body);
    assert.match(
      pod.calls[1]!.body,
      /^\{"stream_options":\{"include_usage":true\},"model":"m"/,
      "by default it asks",
    );
  });
});
