import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { isSaturated, parseVllmMetrics } from "./vllm-metrics.js";

// Fixtures follow vLLM's exposition format: v0.10 (V1 engine, `kv_cache_usage_perc`, an
// `engine` label) and v0.6 (`gpu_cache_usage_perc`).
const v010 = readFileSync("test/fixtures/vllm-v0.10-metrics.txt", "utf8");
const v06 = readFileSync("test/fixtures/vllm-v0.6-metrics.txt", "utf8");

test("reads waiting, running and KV-cache use from vLLM V1 metrics text", () => {
  assert.deepEqual(parseVllmMetrics(v010), { waiting: 9, running: 32, kvUsage: 0.6137 });
});

test("reads the older gpu_cache_usage_perc name", () => {
  assert.deepEqual(parseVllmMetrics(v06), { waiting: 0, running: 14, kvUsage: 0.8312 });
});

test("more than max_waiting waiting, or KV-cache at 80 % or more, is saturation", () => {
  assert.equal(isSaturated(parseVllmMetrics(v010)!, 5), true); // 9 waiting > 5
  assert.equal(isSaturated(parseVllmMetrics(v010)!, 10), false);
  assert.equal(isSaturated(parseVllmMetrics(v06)!, 5), true); // KV 83 %
});

test("text without vLLM's gauges gives no reading (a wrong URL must not look healthy)", () => {
  assert.equal(parseVllmMetrics("# HELP up\nup 1\n"), undefined);
  assert.equal(parseVllmMetrics(""), undefined);
});
