/**
 * The dashboard's client keys and tenants (issue 24) in headless Chromium against a running
 * gateway: each configured key's tenant, its calls in flight and queued, and the tokens its own
 * `tpm` charged in the last minute against the rate; each tenant's keys, their calls summed and
 * its shared budget's use — the same numbers as the gateway's snapshot, within 2 s of a call.
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
        models: [model("chat", [url!], {}, 4)],
        auth: {
          keys: [
            { id: "alpha", sha256: sha256hex("token-alpha"), tpm: 20_000, tenant: "team" },
            { id: "beta", sha256: sha256hex("token-beta") },
          ],
        },
        tenants: { team: { tpm: 50_000, rpm: 600 } },
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
});
