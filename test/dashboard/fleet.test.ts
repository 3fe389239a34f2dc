/**
 * The dashboard in fleet mode (issue 12: "fleet-wide numbers and this replica's share"): two
 * gateways on one Redis in front of one pod; the page of one of them shows the fleet's calls in
 * flight on the lane and the pod, this replica's share beside them, and that the fleet store is
 * connected. Skipped without Chromium (as dashboard.test.ts) or without Redis (as the store
 * tests); under CI=true either missing is a failure.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { held, model, type Stack, startStack, waitFor } from "../gateway/helpers.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "../store/redis-helpers.js";
import { launchChromium, skipWithoutChromium } from "./browser.js";

const skip = skipWithoutChromium();

describe("the dashboard of one replica in fleet mode", { skip, timeout: 60_000 }, () => {
  let a: Stack | undefined;
  let b: Stack | undefined;
  let browser: Browser | undefined;
  let page: Page;
  const hold = new AbortController();

  before(async (t) => {
    const redis = await redisOrSkip(t as never);
    if (redis === null) return;
    redis.disconnect();
    const prefix = uniquePrefix();
    a = await startStack({
      sims: [{ maxNumSeqs: 8, serviceMs: 60_000 }],
      config: ([pod]) => ({
        store: REDIS_URL,
        fleet: { prefix },
        models: [model("m", [pod!], { queue_limit: 8, queue_timeout_s: 30 }, 8)],
      }),
    });
    const pod = a.sims[0]!.url;
    b = await startStack({
      sims: [],
      config: () => ({
        store: REDIS_URL,
        fleet: { prefix },
        models: [model("m", [pod], { queue_limit: 8 }, 8)],
      }),
    });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${a.url}/`);
  });
  after(async () => {
    hold.abort();
    await browser?.close();
    await b?.close();
    await a?.close();
  });

  test("shows the fleet's calls in flight and this replica's share, and the store connected", async (t) => {
    if (a === undefined || b === undefined) return t.skip("no Redis");
    // B's calls first: a replica learns the others' counts when it next talks to the store (its grant).
    for (let i = 0; i < 3; i++) void held(b.url, "m", hold.signal, `b ${i}`);
    await waitFor("the pod to run B's three", () => a!.sims[0]!.stats().running === 3, 5000);
    void held(a.url, "m", hold.signal, "a 0");
    await waitFor("the pod to run all four", () => a!.sims[0]!.stats().running === 4, 5000);
    const lane = '[data-lane="m"]';
    await page.waitForSelector(`${lane} [data-field="inflight"]:text-is("4")`, { timeout: 3000 });
    assert.match(String(await page.textContent(`${lane} [data-field="share"]`)), /this replica 1$/);
    const row = `tr[data-pod="${a.sims[0]!.url}"] [data-field="inflight"]`;
    await page.waitForSelector(`${row}:text-is("4 (1 here)")`, { timeout: 3000 });
    assert.equal(await page.getAttribute("#store", "data-mode"), "connected");
    assert.match(
      String(await page.textContent("#store")),
      /^fleet store redis:\/\/.* connected: .*this replica is /,
    );
  });
});
