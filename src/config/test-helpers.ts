/** Shared by the config tests: the smallest valid config, and the refusal a config gets. */
import assert from "node:assert/strict";
import { ConfigErrors } from "./issues.js";
import { parseConfig } from "./schema.js";

/** sha256("test"): a valid key digest. */
export const DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

/** The smallest valid config, with `extra` merged at the top and `model` into the one model. */
export function config(extra: Record<string, unknown> = {}, model: Record<string, unknown> = {}): unknown {
  return { models: [{ name: "m", pods: [{ url: "http://10.0.0.1:8000" }], ...model }], ...extra };
}

/** The `ConfigErrors` parsing `input` throws (fails the test when it is accepted). */
export function invalid(input: unknown, options?: Parameters<typeof parseConfig>[2]): ConfigErrors {
  try {
    parseConfig(input, undefined, options);
  } catch (e) {
    assert.ok(e instanceof ConfigErrors, `expected ConfigErrors, got ${String(e)}`);
    return e;
  }
  return assert.fail("expected the config to be refused");
}
