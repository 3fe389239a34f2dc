import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEMO_FLEET, demoFleet, demoFleetUrls, startFleet } from "../../src/sim/fleet.js";
import { chatBody } from "../helpers/index.js";
import { get, post } from "./helpers.js";

describe("sim fleet", () => {
  test("starts the demo fleet on free ports and lists its pod URLs by model", async () => {
    const fleet = await demoFleet({ basePort: 0 });
    try {
      assert.deepEqual(Object.keys(fleet.urls), ["demo-chat", "demo-embed", "demo-ocr"]);
      assert.equal(fleet.urls["demo-chat"]?.length, 2);
      for (const pod of fleet.pods) {
        assert.match(pod.url, /^http:\/\/127\.0\.0\.1:\d+$/);
        assert.equal((await get(pod.url, "/health")).status, 200);
        assert.equal(pod.sim.options.model, pod.model);
      }
      const ocr = fleet.pods.find((p) => p.model === "demo-ocr")!;
      assert.equal(ocr.sim.options.overflow, "refuse");
      ocr.sim.setProfile({ serviceMs: 0 });
      assert.deepEqual(JSON.parse((await post(ocr.url, "/ocr/scan", "abc")).text), { pages: 1, bytes: 3 });
      const chat = fleet.pods.find((p) => p.model === "demo-chat")!;
      assert.equal(chat.sim.options.maxNumSeqs, 8);
      assert.equal(chat.sim.options.overflow, "503");
    } finally {
      await fleet.close();
    }
  });

  test("answers with identical bytes from either pod of a model", async () => {
    const fleet = await startFleet({
      models: {
        m: [
          { serviceMs: 0, seed: 1 },
          { serviceMs: 0, seed: 2 },
        ],
      },
    });
    try {
      const body = chatBody("m", "same");
      const [a, b] = fleet.urls.m!;
      assert.equal(
        (await post(a!, "/v1/chat/completions", body)).text,
        (await post(b!, "/v1/chat/completions", body)).text,
      );
    } finally {
      await fleet.close();
    }
  });

  test("names the demo URLs before starting, on consecutive ports from the base port", () => {
    assert.deepEqual(demoFleetUrls(9100), {
      "demo-chat": ["http://127.0.0.1:9100", "http://127.0.0.1:9101"],
      "demo-embed": ["http://127.0.0.1:9102"],
      "demo-ocr": ["http://127.0.0.1:9103"],
    });
    assert.equal(Object.values(DEMO_FLEET).flat().length, 4);
  });

  test("rejects naming the option when one pod's options are invalid", async () => {
    await assert.rejects(
      startFleet({ models: { ok: [{ serviceMs: 0 }], bad: [{ maxNumSeqs: 0 }] } }),
      /sim\.maxNumSeqs/,
    );
  });
});
