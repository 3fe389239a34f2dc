/**
 * The dashboard in headless Chromium against a running gateway (issue 12): it loads with no
 * console error and nothing from anywhere but the gateway, shows the gateway's lanes and pods,
 * shows a burst that queues and a breaker that opens within two seconds of the gateway's own
 * snapshot saying so (the stream sends one a second), keeps its layout still as numbers change,
 * fits a phone's width, works from the keyboard, and says so when the stream drops and
 * reconnects.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { chat, held, model, type Stack, startStack, waitFor } from "../gateway/helpers.js";
import { launchChromium, skipWithoutChromium } from "./browser.js";

/**
 * The page's globals that the callbacks below use (they run in the page; this program has no DOM
 * types, and the page's CSP forbids evaluating strings, so they stay functions).
 */
declare const document: {
  querySelector(selector: string): { textContent: string | null } | null;
  activeElement: { textContent: string | null; id: string } | null;
  documentElement: { scrollWidth: number };
};
declare const window: { innerWidth: number };

const skip = skipWithoutChromium();

/** How long the page may take to show what the gateway's snapshot already says (issue 12). */
const REACT_MS = 2000;

describe("the dashboard in Chromium", { skip, timeout: 60_000 }, () => {
  let stack: Stack;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  const foreign: string[] = [];
  const hold = new AbortController();

  before(async () => {
    stack = await startStack({
      sims: [
        { maxNumSeqs: 2, serviceMs: 60_000 },
        { maxNumSeqs: 1, serviceMs: 1 },
      ],
      config: ([busy, dead]) => ({
        admission: { max_concurrency: 16 },
        models: [
          model("chat", [busy!], { queue_limit: 20, queue_timeout_s: 30 }, 2),
          model("flaky", [dead!], { breaker: { base_cooldown_s: 30, max_cooldown_s: 30 } }),
        ],
      }),
    });
    await stack.sims[1]!.close(); // its port now refuses connections: the first call trips it
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("console", (m) => {
      if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("request", (r) => {
      if (!r.url().startsWith(`${stack.url}/`) && !r.url().startsWith("data:")) foreign.push(r.url());
    });
    await page.goto(`${stack.url}/`);
  });
  after(async () => {
    hold.abort();
    await browser?.close();
    await stack?.close();
  });

  /** Text of the element `selector` on the page. */
  const text = (selector: string) => page.locator(selector).first().textContent();
  const lanePart = (lane: string, f: string) => `[data-lane="${lane}"] [data-field="${f}"]`;

  test("loads with no console error, from the gateway alone, and shows its lanes and pods", async () => {
    await page.waitForSelector('[data-lane="flaky"]', { timeout: 5000 });
    const lanes = await page
      .locator("[data-lane]")
      .evaluateAll((els) => els.map((e) => e.getAttribute("data-lane")));
    assert.deepEqual(lanes, ["chat", "flaky"]);
    const pods = await page
      .locator("tr[data-pod]")
      .evaluateAll((els) => els.map((e) => e.getAttribute("data-pod")));
    assert.deepEqual(
      pods,
      stack.gateway.governor.snapshot().pods.map((p) => p.id),
    );
    assert.equal(await text(lanePart("chat", "limit")), "2");
    assert.equal(await text(lanePart("chat", "queue_limit")), "20");
    assert.equal(await page.getAttribute("#conn", "data-state"), "live");
    // uPlot drew: one canvas per chart (two per lane, refusals, pods).
    assert.equal(await page.locator("canvas").count(), 2 * 2 + 2);
    // The gateway's admission bound has its own box, not a row among the GPU groups.
    assert.ok(stack.gateway.governor.snapshot().groups.some((g) => g.group === "gateway"));
    assert.equal(await page.locator('#group-table tr[data-group="gateway"]').count(), 0);
    assert.deepEqual(problems, []);
    assert.deepEqual(foreign, [], "everything the page loads is served by the gateway");
  });

  test("shows a burst that queues within 2 s, by class, without moving the layout", async () => {
    const boxes = () =>
      page.locator("main section, [data-lane]").evaluateAll((els) =>
        els.map((e) => {
          const r = e.getBoundingClientRect();
          return [e.id || e.getAttribute("data-lane"), r.x, r.y, r.width, r.height];
        }),
      );
    const before = await boxes();
    // Two run and four queue, held until the last test aborts them.
    for (let i = 0; i < 6; i++) void held(stack.url, "chat", hold.signal, `burst ${i}`);
    await waitFor("the gateway to queue 4", () => stack.gateway.governor.snapshot().lanes[0]!.queued === 4);
    await page.waitForFunction(
      (sel) => document.querySelector(sel)?.textContent === "4",
      lanePart("chat", "queued"),
      {
        timeout: REACT_MS,
      },
    );
    assert.equal(await text(lanePart("chat", "inflight")), "2");
    assert.equal(await text(lanePart("chat", "q-default")), "4");
    assert.deepEqual(await boxes(), before, "no section or card moved or changed size");
  });

  test("shows a pod's breaker opening within 2 s", async () => {
    const dead = stack.sims[1]!.url;
    const a = await chat(stack.url, "flaky");
    assert.equal(a.status, 502);
    assert.equal(stack.gateway.governor.snapshot().pods.find((p) => p.id === dead)?.breaker, "open");
    const row = `tr[data-pod="${dead}"]`;
    await page.waitForSelector(`${row}[data-breaker="open"]`, { timeout: REACT_MS });
    // Its lane is gateway_degraded (seed 002's second state), and the card says so.
    await page.waitForSelector(
      '[data-lane="flaky"][data-state="gateway_degraded"] [data-field="degraded"][data-on="true"]',
      {
        timeout: REACT_MS,
      },
    );
    assert.equal(await text(`${row} [data-field="breaker"]`), "open");
    assert.match(String(await text(`${row} [data-field="reopens"]`)), /^\d+(\.\d)? s$/);
  });

  test("shows refusals per minute by code from /metrics", async () => {
    // The tripped pod's lane refuses at once: 503 upstream_unavailable.
    const refused = await Promise.all(Array.from({ length: 5 }, () => chat(stack.url, "flaky")));
    assert.deepEqual(new Set(refused.map((r) => r.status)), new Set([503]));
    // Counted from /metrics, polled every 2 s.
    const refusals = '[data-code="upstream_unavailable"] .n';
    await page.waitForFunction((sel) => Number(document.querySelector(sel)?.textContent) >= 5, refusals, {
      timeout: 5000,
    });
    assert.equal(await page.getAttribute('[data-code="upstream_unavailable"]', "data-zero"), "false");
  });

  test("is usable from the keyboard: legend entries and refusal codes toggle their lines", async () => {
    // Nothing focused yet: the first Tab reaches the skip link, which leads to the lanes.
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Skip to lanes");
    await page.keyboard.press("Enter");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "lanes");
    const legend = page.locator('[data-lane="chat"] .u-legend tr[tabindex="0"]').first();
    await legend.focus();
    assert.equal(await legend.getAttribute("aria-pressed"), "true");
    await page.keyboard.press("Enter");
    assert.equal(await legend.getAttribute("aria-pressed"), "false");
    await page.keyboard.press(" ");
    assert.equal(await legend.getAttribute("aria-pressed"), "true");
    const code = page.locator('[data-code="queue_full"] button');
    await code.focus();
    await page.keyboard.press("Enter");
    assert.equal(await code.getAttribute("aria-pressed"), "false");
  });

  test("fits a phone's width: nothing overflows the page sideways", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(100); // one ResizeObserver round for the charts
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page is ${overflow}px wider than the screen`);
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  test("says so when the stream drops, and reconnects", async () => {
    hold.abort(); // the held calls' sockets would be cut below anyway
    await waitFor("the burst to end", () => stack.gateway.governor.snapshot().lanes[0]!.inflight === 0);
    stack.gateway.server.closeAllConnections();
    await page.waitForSelector('#conn[data-state="down"]', { timeout: 5000 });
    assert.match(String(await text("#conn-text")), /stream lost.*reconnecting in \d+ s/);
    assert.equal(await page.getAttribute("#main", "data-stale"), "true");
    assert.equal(await page.isEnabled("#reconnect"), true);
    await page.waitForSelector('#conn[data-state="live"]', { timeout: 5000 });
    assert.equal(await page.getAttribute("#conn", "data-drops"), "1");
    assert.equal(await page.getAttribute("#main", "data-stale"), "false");
    assert.deepEqual(
      problems.filter((p) => !/telemetry\/stream|ERR_/.test(p)),
      [],
      "no error but the dropped stream's own",
    );
  });
});
