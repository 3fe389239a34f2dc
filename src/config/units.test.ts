import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigError } from "../core/errors.js";
import { parseDuration, parseSize } from "./units.js";

function rejects(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected a ConfigError, got ${String(e)}`);
    return e;
  }
  return assert.fail("expected a ConfigError");
}

describe("parseSize", () => {
  test("reads binary units as powers of 1024 and decimal units as powers of 1000", () => {
    assert.equal(parseSize("20MiB"), 20 * 1024 * 1024);
    assert.equal(parseSize("512KB"), 512_000);
    assert.equal(parseSize("1GiB"), 1024 ** 3);
    assert.equal(parseSize("3KiB"), 3072);
    assert.equal(parseSize("2GB"), 2e9);
    assert.equal(parseSize("100B"), 100);
  });

  test("reads a plain number or numeric string as bytes", () => {
    assert.equal(parseSize(1024), 1024);
    assert.equal(parseSize("1024"), 1024);
    assert.equal(parseSize(0), 0);
  });

  test("rounds a fractional size with a unit to the nearest byte", () => {
    assert.equal(parseSize("1.5KiB"), 1536);
    assert.equal(parseSize("1.1KB"), 1100);
  });

  test("refuses negative, fractional bytes, NaN, unknown units and other types, naming the key", () => {
    for (const bad of [-1, "-5MiB", 1.5, Number.NaN, "20 Mebibytes", "20mib", "lots", "", true, null, [1]]) {
      const e = rejects(() => parseSize(bad, "admission.max_body_bytes"));
      assert.equal(e.path, "admission.max_body_bytes");
      assert.match(e.expected, /a size such as 20MiB/);
      assert.deepEqual(e.received, bad);
    }
  });

  test("names the accepted units when the unit is unknown", () => {
    const e = rejects(() => parseSize("20 Mebibytes", "admission.max_body_bytes"));
    assert.match(e.hint ?? "", /unknown unit "Mebibytes"; use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB/);
  });
});

describe("parseDuration", () => {
  test("reads ms, s, m and h suffixes into milliseconds", () => {
    assert.equal(parseDuration("250ms"), 250);
    assert.equal(parseDuration("30s"), 30_000);
    assert.equal(parseDuration("5m"), 300_000);
    assert.equal(parseDuration("1h"), 3_600_000);
    assert.equal(parseDuration("1.5s"), 1500);
    assert.equal(parseDuration(" 2 s "), 2000);
  });

  test("reads a plain number as seconds, because duration keys end in _s", () => {
    assert.equal(parseDuration(1.5), 1500);
    assert.equal(parseDuration("0.5"), 500);
    assert.equal(parseDuration(0), 0);
  });

  test("reads a plain number as milliseconds when asked to", () => {
    assert.equal(parseDuration(250, "x_ms", "ms"), 250);
    assert.equal(parseDuration("2s", "x_ms", "ms"), 2000);
  });

  test("refuses negative, NaN, infinite, unknown units and other types, naming the key", () => {
    for (const bad of [
      -1,
      "-1s",
      Number.NaN,
      Number.POSITIVE_INFINITY,
      "30 sec",
      "1d",
      "soon",
      "",
      false,
      {},
    ]) {
      const e = rejects(() => parseDuration(bad, "admission.queue_timeout_s"));
      assert.equal(e.path, "admission.queue_timeout_s");
      assert.match(e.expected, /a duration such as 30s/);
      assert.deepEqual(e.received, bad);
    }
  });
});
