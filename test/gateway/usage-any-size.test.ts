/**
 * Issue 21 defect 1 (answer side): a JSON answer's usage is read whatever the answer's size.
 * Before, only answers up to 16 KiB were parsed: a larger one kept its estimate, so a call the
 * estimate under-counted (the provider generating far past the model's `default_max_tokens`) was
 * charged a fraction of what the provider billed, and one it over-counted was never refunded.
 * Counted at the provider simulator, which bills every call's real usage.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import pino from "pino";
import { parseConfig } from "../../src/config/schema.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { startProvider } from "../../src/sim/provider.js";
import { ManualClock } from "../../src/testing.js";
import { call, chatBody, SUITE } from "./helpers.js";

const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

describe("usage of JSON answers of any size", SUITE, () => {
  test("answers of 30-60 KB: the gateway charges exactly what the provider billed", async () => {
    // No max_tokens in the requests: the provider writes 8,000 tokens, the gateway estimates 100.
    const provider = await startProvider({ defaultOutputTokens: 8000 });
    closers.push(() => provider.close());
    const gateway = new Gateway({
      config: parseConfig({
        models: [
          {
            name: "m",
            max_concurrent_requests: 4,
            reserve: 0,
            adaptive: false,
            tpm: 1_000_000,
            default_max_tokens: 100,
            pods: [{ url: provider.url, max_inflight: 4 }],
          },
        ],
      }),
      logger: pino({ level: "silent" }),
      // Time stands still: used_1m is exactly what the reconciles charged.
      clock: new ManualClock(),
    });
    const url = await gateway.listen(0, "127.0.0.1");
    closers.push(() => gateway.close());
    let sizes = 0;
    for (let i = 0; i < 5; i++) {
      const a = await call(url, "/v1/chat/completions", { body: chatBody("m", `long answer ${i}`) });
      assert.equal(a.status, 200);
      assert.ok(a.text.length > 16 * 1024, `answer ${i} is ${a.text.length} bytes`);
      sizes += a.text.length;
    }
    const billed = provider.stats().tokensServed;
    const used = gateway.governor.snapshot().lanes[0]!.tokens!.used_1m;
    assert.ok(billed > 5 * 8000);
    assert.equal(used, billed, `used_1m ${used}, billed ${billed} over ${sizes} bytes of answers`);
  });
});
