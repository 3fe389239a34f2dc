/**
 * The dashboard's client keys and tenants (issue 24) in headless Chromium against a running
 * gateway: each configured key's tenant, its calls in flight and queued, and the tokens its own
 * `tpm` charged in the last minute against the rate; each tenant's keys, their calls summed and
 * its shared budget's use; each key's (tenant's) part of a lane, its calls there against its
 * weight's share — the same numbers as the gateway's snapshot, within 2 s of a call.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { chat, model, type Stack, startStack, waitFor } from "../gateway/helpers.js";
import { sha256hex } from "../helpers/index.js";
import { launchChromium, skipWithoutChromium } from "./browser.js";

declare const document: { querySelector(selector: string): { textContent: string | null } | null };

const skip = skipWithoutChromium();
const REACT_MS = 2000;

describe("the dashboard's keys and tenants in Chromium", { skip, timeout: 60_000 }, () => {
  let stack: Stack;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 4, serviceMs: 1 }],
      config: ([url]) => ({
        models: [model("chat", [url!], { queue_limit: 4, queue_timeout_s: 30 }, 4)],
        auth: {
          keys: [
            { id: "alpha", sha256: sha256hex("token-alpha"), tpm: 20_000, tenant: "team" },
            { id: "beta", sha256: sha256hex("token-beta"), weight: 1 },
          ],
        },
        tenants: { team: { tpm: 50_000, rpm: 600, weight: 3 } },
      }),
    });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("console", (m) => {
      if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    await page.goto(`${stack.url}/`);
  });
  after(async () => {
    await browser?.close();
    await stack?.close();
  });

  const cell = (row: string, f: string) => `${row} [data-field="${f}"]`;
  const text = (selector: string) => page.locator(selector).first().textContent();

  test("each key's tenant and budget use, and the tenant's, as the snapshot says", async () => {
    await page.waitForSelector('tr[data-key="alpha"]', { timeout: 5000 });
    assert.equal(await text(cell('tr[data-key="alpha"]', "tenant")), "team");
    assert.equal(await text(cell('tr[data-key="beta"]', "tenant")), "–");
    assert.equal(await text(cell('tr[data-key="beta"]', "tokens")), "–", "beta has no budget of its own");
    assert.equal(await text(cell('tr[data-tenant="team"]', "keys")), "alpha");
    assert.equal(await text(cell('tr[data-key="beta"]', "inflight")), "0 / –", "no max_inflight: unbounded");

    const a = await chat(stack.url, "chat", {
      headers: { authorization: "Bearer token-alpha" },
      extra: { max_tokens: 100 },
    });
    assert.equal(a.status, 200);
    // Settled: the release (and its reconciliation) follows the answer's last byte.
    await waitFor("the call's release", () => stack.gateway.governor.snapshot().lanes[0]!.inflight === 0);
    const s = stack.gateway.governor.snapshot();
    const used = s.keys.find((k) => k.key === "alpha")!.tokens!.used_1m;
    const team = s.tenants!.find((t) => t.tenant === "team")!;
    assert.ok(used > 0, `the key's bucket charged the call: ${used}`);
    await page.waitForFunction(
      ([sel, want]) => document.querySelector(sel)?.textContent === want,
      [cell('tr[data-key="alpha"]', "tokens"), `${used} / 20000`] as const,
      { timeout: REACT_MS },
    );
    await page.waitForFunction(
      ([sel, want]) => document.querySelector(sel)?.textContent === want,
      [cell('tr[data-tenant="team"]', "tokens"), `${team.tokens!.used_1m} / 50000`] as const,
      { timeout: REACT_MS },
    );
    assert.equal(await text(cell('tr[data-tenant="team"]', "requests")), `${team.requests!.used_1m} / 600`);
    assert.equal(await text(cell('tr[data-tenant="team"]', "inflight")), "0");
    assert.deepEqual(problems, []);
  });

  test("each flow's part of the lane: in flight, queued, weight, share and used, as the snapshot says", async () => {
    assert.equal(await text("#share-table tbody tr.empty td"), "no client key has calls waiting or running");
    const gov = stack.gateway.governor;
    // The lane's 4 slots: the tenant (weight 3) holds 3, beta (weight 1) 1, and one more of beta's waits.
    const held = await Promise.all([
      gov.acquire("chat", { key: "alpha" }),
      gov.acquire("chat", { key: "alpha" }),
      gov.acquire("chat", { key: "alpha" }),
      gov.acquire("chat", { key: "beta" }),
    ]);
    const waiting = gov.acquire("chat", { key: "beta" });
    const flows = gov.snapshot().lanes.find((l) => l.lane === "chat")!.flows!;
    assert.deepEqual(
      flows.map((f) => [f.flow, f.inflight, f.queued, f.weight, f.share, f.used]),
      [
        ["key:beta", 1, 1, 1, 0.25, 0.25],
        ["tenant:team", 3, 0, 3, 0.75, 0.75],
      ],
    );
    const team = 'tr[data-share-lane="chat"][data-flow="tenant:team"]';
    const beta = 'tr[data-share-lane="chat"][data-flow="key:beta"]';
    await page.waitForFunction(
      ([sel, want]) => document.querySelector(sel)?.textContent === want,
      [cell(beta, "queued"), "1"] as const,
      { timeout: REACT_MS },
    );
    const row = async (sel: string) =>
      Promise.all(["inflight", "queued", "weight", "share", "used"].map((f) => text(cell(sel, f))));
    assert.deepEqual(await row(team), ["3", "0", "3", "75 %", "75 %"]);
    assert.deepEqual(await row(beta), ["1", "1", "1", "25 %", "25 %"]);
    for (const l of held) l.release();
    (await waiting).release();
    await page.waitForSelector("#share-table tbody tr.empty", { timeout: REACT_MS });
    assert.deepEqual(problems, []);
  });
});
