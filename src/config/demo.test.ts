import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { ConfigError } from "../core/errors.js";
import { DEMO_CONFIG_YAML, demoConfig } from "./demo.js";
import { loadConfigText } from "./load.js";

const FLEET = {
  chat: ["http://127.0.0.1:7001", "http://127.0.0.1:7002"],
  embed: ["http://127.0.0.1:7011"],
  ocr: ["http://127.0.0.1:7021"],
};

describe("demoConfig", () => {
  test("puts the simulators behind the demo models with the documented bounds", () => {
    const c = demoConfig(FLEET);
    const chat = c.models.find((m) => m.name === "demo-chat")!;
    assert.equal(chat.maxConcurrentRequests, 16);
    assert.equal(chat.queueLimit, 32);
    assert.equal(chat.queueTimeoutMs, 10_000);
    assert.deepEqual(chat.pods, [
      { url: "http://127.0.0.1:7001", maxInflight: 8, gpuGroup: "demo-gpu" },
      { url: "http://127.0.0.1:7002", maxInflight: 8, gpuGroup: "demo-gpu" },
    ]);
    const embed = c.models.find((m) => m.name === "demo-embed")!;
    assert.equal(embed.maxConcurrentRequests, 16);
    assert.deepEqual(embed.pods, [{ url: "http://127.0.0.1:7011", maxInflight: 16, gpuGroup: "demo-gpu" }]);
    const ocr = c.models.find((m) => m.name === "demo-ocr")!;
    assert.deepEqual(ocr.pods, [{ url: "http://127.0.0.1:7021", maxInflight: 4, gpuGroup: "127.0.0.1" }]);
    assert.deepEqual(c.routes, [{ match: "/ocr/", model: "demo-ocr" }]);
    assert.deepEqual(c.gpuGroups, { "demo-gpu": { maxInflight: 20 } });
    assert.equal(c.admission.maxConcurrency, 64);
    assert.deepEqual(c.auth, { open: false, keys: [] });
    assert.deepEqual(c.listen, { host: "127.0.0.1", port: 8080 });
  });

  test("takes another listen address, through the same validation", () => {
    assert.deepEqual(demoConfig(FLEET, { listen: 0 }).listen, { host: "127.0.0.1", port: 0 });
    assert.throws(() => demoConfig(FLEET, { listen: "nowhere" }), ConfigError);
  });

  test("refuses an empty pod list like a file would", () => {
    assert.throws(
      () => demoConfig({ ...FLEET, ocr: [] }),
      (e: unknown) => e instanceof ConfigError && e.path === "models[2].pods",
    );
  });

  test("ships YAML that validates on its own", () => {
    assert.equal(loadConfigText(DEMO_CONFIG_YAML, "demo").models.length, 3);
  });

  test("is shown verbatim in docs/config.md", () => {
    const doc = readFileSync(new URL("../../docs/config.md", import.meta.url), "utf8");
    assert.ok(
      doc.includes(`\`\`\`yaml\n${DEMO_CONFIG_YAML}\`\`\``),
      "docs/config.md shows an outdated demo config",
    );
  });
});
