import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { ConfigError } from "../core/errors.js";
import { ConfigErrors } from "./issues.js";
import { loadConfigFile, loadConfigText, resolveConfigPath } from "./load.js";

const FULL = new URL("../../test/config/full.yaml", import.meta.url);

function refused(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected a ConfigError, got ${String(e)}`);
    return e;
  }
  return assert.fail("expected the config to be refused");
}

describe("loadConfigText", () => {
  test("names the line and column of a YAML syntax error, with path (yaml)", () => {
    const text = "listen: 127.0.0.1:8080\nmodels:\n  - name: m\n    pods: [ { url: http://x:1 }\n";
    const e = refused(() => loadConfigText(text, "sluice.yaml"));
    assert.equal(e.path, "(yaml)");
    assert.match(e.message, /^sluice\.yaml, line \d+, column \d+: invalid YAML: /);
  });

  test("treats a duplicated key as a syntax error on its line", () => {
    const e = refused(() => loadConfigText("models: []\nlisten: 1\nlisten: 2\n", "dup.yaml"));
    assert.equal(e.path, "(yaml)");
    assert.match(e.message, /line 3/);
  });

  test("gives the line of a bad value nested inside a model", () => {
    const text = [
      "models:",
      "  - name: m",
      "    breaker:",
      "      fail_threshold: 2",
      "      backoff_factor: 0.5",
      "    pods: [ { url: 'http://x:1' } ]",
    ].join("\n");
    const e = refused(() => loadConfigText(text, "sluice.yaml"));
    assert.equal(e.path, "models[0].breaker.backoff_factor");
    assert.match(e.message, /\(at sluice\.yaml, line 5, column 23\)$/);
  });

  test("gives the line of an unknown key itself", () => {
    const text = "models:\n  - name: m\n    max_concurent_requests: 4\n    pods: [ { url: 'http://x:1' } ]\n";
    const e = refused(() => loadConfigText(text, "sluice.yaml"));
    assert.equal(
      e.message,
      'models[0].max_concurent_requests: unknown key (did you mean "max_concurrent_requests"?) (at sluice.yaml, line 3, column 5)',
    );
  });

  test("gives the line of a reference to an unknown model", () => {
    const text =
      "models:\n  - name: m\n    pods: [ { url: 'http://x:1' } ]\nroutes:\n  - { match: /ocr/, model: ocr }\n";
    const e = refused(() => loadConfigText(text, "sluice.yaml"));
    assert.equal(e.path, "routes[0].model");
    assert.match(e.message, /line 5/);
  });

  test("orders problems as they appear in the file", () => {
    const text =
      "models:\n  - name: m\n    reserve: -1\n    pods: [ { url: 'http://x:1' } ]\nadmission: { max_concurrency: 0 }\n";
    const e = refused(() => loadConfigText(text, "sluice.yaml"));
    assert.ok(e instanceof ConfigErrors);
    assert.deepEqual(
      e.issues.map((i) => i.path),
      ["models[0].reserve", "admission.max_concurrency"],
    );
  });

  test("reads JSON too", () => {
    const c = loadConfigText(
      JSON.stringify({ models: [{ name: "m", pods: [{ url: "http://x:1" }] }] }),
      "c.json",
    );
    assert.equal(c.models[0]?.name, "m");
  });

  test("refuses an empty file as a config without a mapping", () => {
    const e = refused(() => loadConfigText("", "empty.yaml"));
    assert.equal(e.path, "(root)");
  });
});

describe("loadConfigFile", () => {
  test("loads and validates the DESIGN §3.4 example file", async () => {
    const c = await loadConfigFile(FULL.pathname);
    assert.equal(c.models.length, 4);
    assert.equal(c.models[0]?.name, "qwen3-27b");
  });

  test("refuses a file it cannot read with path (file)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sluice-config-"));
    try {
      await assert.rejects(loadConfigFile(join(dir, "missing.yaml")), (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        assert.equal(e.path, "(file)");
        assert.equal(e.hint, "ENOENT");
        return true;
      });
      const bad = join(dir, "bad.yaml");
      await writeFile(bad, "models: [ { name: m, pods: [ { url: nope } ] } ]\n");
      await assert.rejects(loadConfigFile(bad), /models\[0\]\.pods\[0\]\.url: expected an http\(s\) URL/);
    } finally {
      await rm(dir, { recursive: true });
    }
  });
});

describe("resolveConfigPath", () => {
  test("prefers --config, then SLUICE_CONFIG, else nothing", () => {
    assert.equal(resolveConfigPath("a.yaml", { SLUICE_CONFIG: "b.yaml" }), "a.yaml");
    assert.equal(resolveConfigPath(undefined, { SLUICE_CONFIG: "b.yaml" }), "b.yaml");
    assert.equal(resolveConfigPath(undefined, {}), undefined);
    assert.equal(resolveConfigPath("", { SLUICE_CONFIG: "" }), undefined);
  });
});
