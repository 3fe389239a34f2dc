import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { request } from "undici";
import { startSim } from "../../src/sim/server.js";
import { chatBody, waitFor } from "../helpers/index.js";
import { get, held, post } from "./helpers.js";

// Requests meant to be observed mid-flight get a service time far beyond the test, and are
// ended by aborting them: no test sleeps, and every one also checks nothing is left behind.
const HOLD_MS = 60_000;

describe("sim server: concurrency", () => {
  test("never runs more than maxNumSeqs when offered three times as many", async () => {
    const sim = await startSim({ maxNumSeqs: 4, serviceMs: 20, jitterSigma: 0 });
    try {
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) => post(sim.url, "/v1/chat/completions", chatBody("m", `q${i}`))),
      );
      assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]));
      const s = sim.stats();
      assert.equal(s.maxRunningSeen, 4);
      assert.equal(s.completed, 12);
      assert.equal(s.running + s.waiting, 0);
    } finally {
      await sim.close();
    }
  });

  test("answers 503 with an OpenAI error body past maxNumSeqs + maxWaiting", async () => {
    const sim = await startSim({ maxNumSeqs: 2, maxWaiting: 1, overflow: "503", serviceMs: HOLD_MS });
    const ac = new AbortController();
    try {
      const pending = [1, 2, 3].map(() => held(sim.url, ac.signal));
      await waitFor("2 running, 1 waiting", () => sim.stats().running === 2 && sim.stats().waiting === 1);
      const res = await post(sim.url, "/v1/chat/completions", chatBody("m", "one too many"));
      assert.equal(res.status, 503);
      const body = JSON.parse(res.text);
      assert.equal(body.error.code, "overloaded");
      assert.match(body.error.message, /2 running \(max_num_seqs 2\), 1 waiting \(max_waiting 1\)/);
      assert.equal(sim.stats().refused, 1);
      ac.abort();
      await Promise.all(pending);
      await waitFor("nothing left", () => sim.stats().running + sim.stats().waiting === 0);
    } finally {
      ac.abort();
      await sim.close();
    }
  });

  test("answers 429 with retry-after past the bound when overflow is 429", async () => {
    const sim = await startSim({ maxNumSeqs: 1, maxWaiting: 0, overflow: "429", serviceMs: HOLD_MS });
    const ac = new AbortController();
    try {
      const pending = held(sim.url, ac.signal);
      await waitFor("1 running", () => sim.stats().running === 1);
      const res = await post(sim.url, "/v1/chat/completions", chatBody("m", "over"));
      assert.equal(res.status, 429);
      assert.equal(res.headers["retry-after"], "1");
      assert.equal(JSON.parse(res.text).error.code, "rate_limit_exceeded");
      ac.abort();
      await pending;
    } finally {
      ac.abort();
      await sim.close();
    }
  });

  test("destroys the socket with no response byte past the bound when overflow is refuse", async () => {
    const sim = await startSim({ maxNumSeqs: 1, maxWaiting: 1, overflow: "refuse", serviceMs: HOLD_MS });
    const ac = new AbortController();
    try {
      const pending = [1, 2].map(() => held(sim.url, ac.signal));
      await waitFor("1 running, 1 waiting", () => sim.stats().running === 1 && sim.stats().waiting === 1);
      const err = await post(sim.url, "/ocr/page", "x".repeat(1000)).then(
        (res) => assert.fail(`expected a socket error, got HTTP ${res.status}`),
        (e: { code?: string }) => e,
      );
      assert.ok(["UND_ERR_SOCKET", "ECONNRESET", "EPIPE"].includes(err.code ?? ""), `got ${err.code}`);
      const s = sim.stats();
      assert.equal(s.refused, 1);
      assert.equal(s.received, 3);
      ac.abort();
      await Promise.all(pending);
    } finally {
      ac.abort();
      await sim.close();
    }
  });

  test("forgets a waiting request whose client aborts, and frees the slot of a running one", async () => {
    const sim = await startSim({ maxNumSeqs: 1, serviceMs: HOLD_MS });
    const running = new AbortController();
    const waiting = new AbortController();
    try {
      const first = held(sim.url, running.signal, "first");
      await waitFor("1 running", () => sim.stats().running === 1);
      const second = held(sim.url, waiting.signal, "second");
      await waitFor("1 waiting", () => sim.stats().waiting === 1);
      waiting.abort();
      await second;
      await waitFor("the waiter gone", () => sim.stats().waiting === 0);
      assert.equal(sim.stats().running, 1);
      running.abort();
      await first;
      await waitFor("the slot freed", () => sim.stats().running === 0);
      assert.equal(sim.stats().aborted, 2);
      // The freed slot is usable: nothing leaked.
      sim.setProfile({ serviceMs: 1 });
      assert.equal((await post(sim.url, "/v1/chat/completions", chatBody("m", "after"))).status, 200);
      assert.equal(sim.stats().maxRunningSeen, 1);
    } finally {
      running.abort();
      waiting.abort();
      await sim.close();
    }
  });

  test("frees the slot of a stream whose client leaves mid-stream", async () => {
    const sim = await startSim({ maxNumSeqs: 1, serviceMs: 0, tokensPerSecond: 1 });
    try {
      const res = await request(`${sim.url}/v1/chat/completions`, {
        method: "POST",
        body: chatBody("m", "slow", { stream: true }),
      });
      assert.equal(res.statusCode, 200);
      for await (const _ of res.body) break; // first chunk arrived: now leave
      await waitFor("the slot freed", () => sim.stats().running === 0);
      assert.equal(sim.stats().aborted, 1);
    } finally {
      await sim.close();
    }
  });

  test("reports vLLM's metric names with the live running and waiting counts", async () => {
    const sim = await startSim({ model: "qwen", maxNumSeqs: 4, serviceMs: HOLD_MS });
    const ac = new AbortController();
    try {
      const pending = Array.from({ length: 5 }, () => held(sim.url, ac.signal));
      await waitFor("4 running, 1 waiting", () => sim.stats().running === 4 && sim.stats().waiting === 1);
      const { text } = await get(sim.url, "/metrics");
      assert.match(text, /^# HELP vllm:num_requests_running /m);
      assert.match(text, /^# TYPE vllm:num_requests_running gauge$/m);
      assert.match(text, /^vllm:num_requests_running\{model_name="qwen"\} 4$/m);
      assert.match(text, /^vllm:num_requests_waiting\{model_name="qwen"\} 1$/m);
      assert.match(text, /^vllm:gpu_cache_usage_perc\{model_name="qwen"\} 1$/m);
      assert.match(text, /^vllm:kv_cache_usage_perc\{model_name="qwen"\} 1$/m);
      assert.match(text, /^# TYPE vllm:request_success_total counter$/m);
      ac.abort();
      await Promise.all(pending);
      await waitFor("nothing left", () => sim.stats().running + sim.stats().waiting === 0);
      sim.setProfile({ serviceMs: 0 });
      await Promise.all([1, 2, 3].map(() => post(sim.url, "/v1/chat/completions", chatBody("m", "done"))));
      const after = (await get(sim.url, "/metrics")).text;
      assert.match(after, /^vllm:num_requests_running\{model_name="qwen"\} 0$/m);
      assert.match(after, /^vllm:kv_cache_usage_perc\{model_name="qwen"\} 0$/m);
      assert.match(after, /^vllm:request_success_total\{finished_reason="stop",model_name="qwen"\} 3$/m);
    } finally {
      ac.abort();
      await sim.close();
    }
  });

  test("reports KV-cache usage as running / maxNumSeqs", async () => {
    const sim = await startSim({ maxNumSeqs: 8, serviceMs: HOLD_MS });
    const ac = new AbortController();
    try {
      const pending = [1, 2, 3].map(() => held(sim.url, ac.signal));
      await waitFor("3 running", () => sim.stats().running === 3);
      assert.match(
        (await get(sim.url, "/metrics")).text,
        /^vllm:kv_cache_usage_perc\{model_name="sim-model"\} 0.375$/m,
      );
      ac.abort();
      await Promise.all(pending);
    } finally {
      ac.abort();
      await sim.close();
    }
  });

  test("starts waiters at once when setProfile raises maxNumSeqs", async () => {
    const sim = await startSim({ maxNumSeqs: 1, serviceMs: HOLD_MS });
    const ac = new AbortController();
    try {
      const pending = [1, 2, 3].map(() => held(sim.url, ac.signal));
      await waitFor("1 running, 2 waiting", () => sim.stats().running === 1 && sim.stats().waiting === 2);
      sim.setProfile({ maxNumSeqs: 3 });
      assert.deepEqual([sim.stats().running, sim.stats().waiting, sim.stats().maxRunningSeen], [3, 0, 3]);
      ac.abort();
      await Promise.all(pending);
    } finally {
      ac.abort();
      await sim.close();
    }
  });

  test("answers a burst with serviceMs 0 and keeps its peak at maxNumSeqs", async () => {
    const sim = await startSim({ maxNumSeqs: 2, serviceMs: 0 });
    try {
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, i) => post(sim.url, "/v1/chat/completions", chatBody("m", `b${i}`))),
      );
      assert.equal(answers.filter((a) => a.status === 200).length, 200);
      const s = sim.stats();
      assert.equal(s.completed, 200);
      assert.ok(s.maxRunningSeen <= 2);
      assert.equal(s.running + s.waiting, 0);
    } finally {
      await sim.close();
    }
  });

  test("close() cuts running and waiting requests and leaves nothing counted", async () => {
    const sim = await startSim({ maxNumSeqs: 1, serviceMs: HOLD_MS });
    const pending = [1, 2].map(() =>
      post(sim.url, "/v1/chat/completions", chatBody("m", "cut")).catch((e: unknown) => e),
    );
    await waitFor("1 running, 1 waiting", () => sim.stats().running === 1 && sim.stats().waiting === 1);
    await sim.close();
    const outcomes = await Promise.all(pending);
    for (const o of outcomes) assert.ok(o instanceof Error);
    await waitFor("nothing left", () => sim.stats().running + sim.stats().waiting === 0);
  });
});
