/**
 * The tokenizer is loaded only where a token budget reads its counts: importing it costs about
 * 0.6 s of CPU and tens of MB, which a gateway without a `tpm` never needs, and a gateway with
 * one loads it at start rather than on its first request.
 */
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { after, test } from "node:test";
import pino from "pino";
import { parseConfig } from "../../src/config/schema.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { model } from "./helpers.js";

const require = createRequire(import.meta.url);
const tokenizerPath = require.resolve("gpt-tokenizer/encoding/o200k_base");
const loaded = () => require.cache[tokenizerPath] !== undefined;
const gateways: Gateway[] = [];
after(() => Promise.all(gateways.map((g) => g.close())));

const start = (extra: Record<string, unknown>) => {
  const config = parseConfig({ models: [model("m", ["http://127.0.0.1:9"], extra)] });
  const gateway = new Gateway({ config, logger: pino({ level: "silent" }) });
  gateways.push(gateway);
  return gateway;
};

test("a gateway without a tpm never loads the tokenizer; one with a tpm loads it at start", () => {
  start({});
  assert.equal(loaded(), false, "no model is metered: the tokenizer stays unloaded");
  start({ tpm: 60_000 });
  assert.equal(loaded(), true, "a metered model: loaded before any request");
});
