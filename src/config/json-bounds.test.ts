/** The bounded parse's keys (issue 21): defaults, values written, and the refusal of a bad one naming its key path. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseConfig } from "./schema.js";
import { config, invalid } from "./test-helpers.js";

describe("admission.max_json_depth, admission.max_json_values, models[].image_tokens", () => {
  test("defaults and written values", () => {
    const d = parseConfig(config());
    assert.deepEqual(
      [d.admission.maxJsonDepth, d.admission.maxJsonValues, d.models[0]!.imageTokens],
      [64, 500_000, 1445],
    );
    const c = parseConfig(
      config({ admission: { max_json_depth: 200, max_json_values: 3_000_000 } }, { image_tokens: 48169 }),
    );
    assert.deepEqual(
      [c.admission.maxJsonDepth, c.admission.maxJsonValues, c.models[0]!.imageTokens],
      [200, 3_000_000, 48169],
    );
  });

  test("a negative or fractional bound is refused with its key path", () => {
    for (const [input, path, expected] of [
      [config({ admission: { max_json_depth: -1 } }), "admission.max_json_depth", "an integer ≥ 1"],
      [config({ admission: { max_json_values: 0 } }), "admission.max_json_values", "an integer ≥ 1"],
      [config({ admission: { max_json_values: 1.5 } }), "admission.max_json_values", "an integer ≥ 1"],
      [config({}, { image_tokens: -5 }), "models[0].image_tokens", "an integer ≥ 0"],
    ] as const) {
      const e = invalid(input);
      assert.equal(e.issues[0]!.path, path);
      assert.equal(e.issues[0]!.expected, expected);
    }
  });
});
