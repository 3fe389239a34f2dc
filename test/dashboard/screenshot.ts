/**
 * Makes docs/dashboard.png: the demo fleet behind the demo config, driven for about a minute and
 * a half (steady traffic from apps on sluice/client, two raw floods that queue and get refused, an
 * OCR pod that degrades and recovers, so its width is cut and walks back up), then the dashboard
 * in headless Chromium.
 *
 *   node --import tsx test/dashboard/screenshot.ts [out.png]
 *
 * Not a test (no assertions, real time): run it by hand when the page changes.
 */
import { setTimeout as delay } from "node:timers/promises";
import { pino } from "pino";
import { Agent, request } from "undici";
import { createSluiceFetch } from "../../src/client/index.js";
import { demoConfig } from "../../src/config/demo.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { demoFleet } from "../../src/sim/fleet.js";
import { launchChromium } from "./browser.js";

const out = process.argv[2] ?? "docs/dashboard.png";
const fleet = await demoFleet({ basePort: 0 });
const config = demoConfig({
  chat: fleet.urls["demo-chat"] ?? [],
  embed: fleet.urls["demo-embed"] ?? [],
  ocr: fleet.urls["demo-ocr"] ?? [],
});
const gateway = new Gateway({ config, logger: pino({ level: "silent" }) });
const url = await gateway.listen(0, "127.0.0.1");
const agent = new Agent({ connections: 512 });
let running = true;

async function call(path: string, body: object, priority = "default"): Promise<void> {
  try {
    const res = await request(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-sluice-priority": priority },
      body: JSON.stringify(body),
      dispatcher: agent,
    });
    await res.body.dump();
  } catch {
    // a refused connection or a cut answer: the dashboard shows it; the driver goes on
  }
}

const chat = (priority = "default") =>
  call("/v1/chat/completions", { model: "demo-chat", messages: [{ role: "user", content: "hi" }] }, priority);

/** The steady traffic comes from apps that use sluice/client: they wait out refusals. */
const apps = {
  interactive: createSluiceFetch({ baseUrl: url, priority: "interactive" }),
  bulk: createSluiceFetch({ baseUrl: url, priority: "bulk" }),
};
async function appCall(app: keyof typeof apps, path: string, body: object): Promise<void> {
  try {
    const res = await apps[app](path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    await res.arrayBuffer();
  } catch {
    // as above
  }
}
const chatMessage = { model: "demo-chat", messages: [{ role: "user", content: "hi" }] };

/** `n` clients each sending one call after another until the run ends. */
function loop(n: number, send: () => Promise<void>, pauseMs = 0): Promise<void>[] {
  return Array.from({ length: n }, async () => {
    while (running) {
      await send();
      if (pauseMs > 0) await delay(pauseMs);
    }
  });
}

const ocrPod = fleet.pods.find((p) => p.model === "demo-ocr")!.sim;
const loops = [
  ...loop(10, () => appCall("interactive", "/v1/chat/completions", chatMessage), 200),
  ...loop(8, () => appCall("bulk", "/v1/chat/completions", chatMessage)),
  ...loop(4, () => appCall("bulk", "/v1/embeddings", { model: "demo-embed", input: "x" }), 50),
  ...loop(3, () => appCall("bulk", "/ocr/page", { page: 1 }), 100),
];
const browser = await launchChromium();
const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
await page.goto(`${url}/`);

await delay(15_000);
// A flood of bulk work: the queue fills, the rest is refused at once.
void Promise.all(Array.from({ length: 120 }, () => chat("bulk")));
await delay(10_000);
// The OCR pod degrades: it takes one call and refuses the others' connections. AIMD cuts its width.
ocrPod.setProfile({ maxNumSeqs: 1, maxWaiting: 0 });
loops.push(...loop(4, () => appCall("bulk", "/ocr/page", { page: 2 }), 20));
await delay(15_000);
ocrPod.setProfile({ maxNumSeqs: 2, maxWaiting: 2 }); // it recovers: the width walks back up
await delay(10_000);
void Promise.all(Array.from({ length: 90 }, (_, i) => chat(i % 3 === 0 ? "interactive" : "default")));
await delay(25_000);

await page.screenshot({ path: out, fullPage: true });
console.log(`wrote ${out}`);
running = false;
await browser.close();
await Promise.race([Promise.all(loops), delay(15_000)]);
await gateway.close();
await agent.close();
await fleet.close();
