/**
 * Per-key and per-tenant token budgets (issue 24) through one real gateway in front of a fake
 * provider that bills by call id (billing-provider.ts), counted at the provider: a key with
 * `tpm: 20000` floods the model with 40 calls of ~1000 tokens and is billed no more than its budget
 * allows over the run (the bound is derived in key-flood.ts); a tenant's two keys flooding
 * together share one such budget; a key without a budget, sending at the same time, is never
 * refused. Refusals name the key's (tenant's) bucket and its refill time; answers' `RateLimit` and
 * `x-ratelimit-*` headers describe the tightest bucket on the call's path, the key's included.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import pino from "pino";
import { parseConfig } from "../../src/config/schema.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { type BillingProvider, startBillingProvider } from "./billing-provider.js";
import { SUITE, waitFor } from "./helpers.js";
import {
  allowed,
  assertBucketRefusals,
  assertTightest,
  billedTo,
  flood,
  KEY_TPM,
  keyBudgetConfig,
  MODEL_TPM,
} from "./key-flood.js";

const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

async function start(): Promise<{
  provider: BillingProvider;
  gateway: Gateway;
  url: string;
  startedAt: number;
}> {
  const provider = await startBillingProvider();
  closers.push(() => provider.close());
  const startedAt = performance.now(); // before the gateway: its buckets start full after this
  const gateway = new Gateway({
    config: parseConfig(keyBudgetConfig(provider.url)),
    logger: pino({ level: "silent" }),
  });
  const url = await gateway.listen(0, "127.0.0.1");
  closers.push(() => gateway.close());
  return { provider, gateway, url, startedAt };
}

describe("gateway: per-key token budgets, counted at the provider", SUITE, () => {
  test("a key's and a tenant's tpm hold at the provider under a flood; a key without one is untouched", async (t) => {
    const { provider, gateway, url, startedAt } = await start();
    const answers = await flood([url], { a: 40, b: 20, t1: 20, t2: 20 });
    const of = (key: string) => answers.filter((a) => a.key === key);

    const a = billedTo(provider, ["a"]);
    const team = billedTo(provider, ["t1", "t2"]);
    const b = billedTo(provider, ["b"]);
    const allowedA = allowed(KEY_TPM, startedAt, a.lastAt);
    const allowedTeam = allowed(KEY_TPM, startedAt, team.lastAt);
    t.diagnostic(
      `billed: a ${a.tokens} in ${a.calls} calls (allowed ${allowedA.toFixed(0)}), team ${team.tokens} in ` +
        `${team.calls} (allowed ${allowedTeam.toFixed(0)}), b ${b.tokens} in ${b.calls}`,
    );
    assert.ok(a.tokens <= allowedA, `key a billed ${a.tokens}, its budget allows ${allowedA}`);
    assert.ok(
      team.tokens <= allowedTeam,
      `tenant team billed ${team.tokens}, its budget allows ${allowedTeam}`,
    );
    // The budgets were binding, and used: most of a minute's tokens went out before the refusals.
    assert.ok(assertBucketRefusals(of("a"), "key:a") > 0, "key a was refused past its budget");
    assert.ok(
      assertBucketRefusals([...of("t1"), ...of("t2")], "tenant:team") > 0,
      "the tenant's keys were refused past its budget",
    );
    assert.ok(a.tokens > KEY_TPM * 0.8, `key a used its budget: ${a.tokens}`);
    assert.ok(team.tokens > KEY_TPM * 0.8, `the tenant used its budget: ${team.tokens}`);
    // Every answer the clients got 200 was billed once, and nothing else was.
    assert.equal(answers.filter((x) => x.status === 200).length, provider.ledger().length);
    assert.deepEqual(provider.duplicates(), []);
    // The key without a budget: every call served, whatever the others did.
    assert.deepEqual(
      of("b").map((x) => x.status),
      Array(20).fill(200),
      "key b is never refused",
    );
    assert.equal(b.calls, 20);

    // The headers: the tightest bucket on each call's path.
    assertTightest(of("a").find((x) => x.status === 200)!, "key", KEY_TPM);
    assertTightest(of("t1").find((x) => x.status === 200)!, "tenant", KEY_TPM);
    const bAnswer = of("b")[0]!;
    assert.equal(
      bAnswer.headers["x-ratelimit-limit-tokens"],
      String(MODEL_TPM),
      "b's tightest is the model's",
    );
    assert.doesNotMatch(String(bAnswer.headers["ratelimit-policy"]), /key-tokens|tenant-tokens/);

    // The snapshot shows each key's and the tenant's budget, and nothing is left held.
    await waitFor("every call ended", () => gateway.governor.snapshot().lanes.every((l) => l.inflight === 0));
    const s = gateway.governor.snapshot();
    const keyA = s.keys.find((k) => k.key === "a")!;
    assert.equal(keyA.tokens?.per_minute, KEY_TPM);
    assert.ok(
      Math.abs(keyA.tokens!.used_1m - a.tokens) <= a.calls * 16,
      `a's used_1m ${keyA.tokens!.used_1m} ~ billed ${a.tokens}`,
    );
    const tenant = s.tenants?.find((x) => x.tenant === "team");
    assert.deepEqual(tenant?.keys, ["t1", "t2"]);
    assert.equal(tenant?.tokens?.per_minute, KEY_TPM);
    assert.equal(s.keys.find((k) => k.key === "t1")?.tenant, "team");
    for (const k of s.keys) assert.deepEqual([k.inflight, k.queued], [0, 0], `key ${k.key}`);
  });
});
