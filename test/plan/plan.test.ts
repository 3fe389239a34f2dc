/**
 * `sluice plan`'s arithmetic (Little's law, the token ceiling, pod capacity, which binds, the
 * queue that drains within its timeout), its input errors, and `--from-metrics` against a
 * simulated vLLM pod under load and a sluice gateway's metrics.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { request } from "undici";
import { main } from "../../src/cli/plan.js";
import { PlanInputError, planInput } from "../../src/plan/input.js";
import { MeasureError, measure, parsePrometheus } from "../../src/plan/measure.js";
import { plan } from "../../src/plan/plan.js";
import { startSim } from "../../src/sim/server.js";

describe("plan", () => {
  test("Little's law: 20 rps at 4 s need 80 in flight; the traffic binds", () => {
    const p = plan({ rps: 20, latencyS: 4 });
    assert.equal(p.concurrency, 80);
    assert.equal(p.binds, "traffic");
    assert.deepEqual(p.config, { max_concurrent_requests: 80, queue_limit: 320, queue_timeout_s: 30 });
    assert.equal(p.sustainable_rps, 20);
    assert.deepEqual([p.token_ceiling, p.pod_capacity], [null, null]);
  });

  test("the token ceiling (tpm ÷ 60 ÷ T × L) binds when it is lower, and says what rate it sustains", () => {
    const p = plan({ rps: 20, latencyS: 4, tokensPerRequest: 1500, tpm: 1_000_000 });
    assert.ok(Math.abs(p.token_rps! - 11.111) < 0.001);
    assert.ok(Math.abs(p.token_ceiling! - 44.444) < 0.001);
    assert.equal(p.binds, "tokens");
    assert.equal(p.config.max_concurrent_requests, 44);
    assert.equal(p.config.tpm, 1_000_000);
    assert.equal(p.sustainable_rps, 11);
    assert.match(p.notes[0]!, /the token budget binds: 44 calls in flight carry 11 rps, not 20/);
  });

  test("reasoning tokens count as output: they lower the token ceiling, and the note says by how much (seed 004)", () => {
    const p = plan({ rps: 20, latencyS: 4, tokensPerRequest: 1500, reasoningTokens: 3000, tpm: 1_000_000 });
    // 1,000,000 ÷ 60 ÷ 4,500 × 4 = 14.8 calls in flight, where 1,500 tokens alone gave 44.4.
    assert.ok(Math.abs(p.token_ceiling! - 14.815) < 0.001);
    assert.equal(p.config.max_concurrent_requests, 14);
    assert.ok(
      p.notes.some((n) =>
        /reasoning tokens count as output: 3000 per request take the token ceiling from 44.44 to 14.81/.test(
          n,
        ),
      ),
    );
    assert.throws(
      () => planInput({ rps: "1", "latency-s": "1", "reasoning-tokens": "-5" }),
      /--reasoning-tokens: expected a number ≥ 0, got "-5"/,
    );
    assert.throws(
      () => planInput({ rps: "1", "latency-s": "1", "reasoning-tokens": "5" }),
      /--tokens-per-request is required/,
    );
  });

  test("pods bind when they carry less than the traffic needs", () => {
    const p = plan({ rps: 20, latencyS: 4, pods: 2, perPodMax: 24, tokensPerRequest: 1500, tpm: 2_000_000 });
    assert.equal(p.pod_capacity, 48);
    assert.equal(p.binds, "pods");
    assert.equal(p.config.max_concurrent_requests, 48);
    assert.deepEqual(p.config.pods, { count: 2, max_inflight: 24 });
  });

  test("a long latency stretches the queue timeout and shortens the queue to what drains in it", () => {
    const p = plan({ rps: 1, latencyS: 60 });
    assert.deepEqual(p.config, { max_concurrent_requests: 60, queue_limit: 120, queue_timeout_s: 120 });
  });

  test("less than one call in flight still gets a limit of 1", () => {
    const p = plan({ rps: 0.1, latencyS: 2 });
    assert.equal(p.config.max_concurrent_requests, 1);
    assert.ok(p.notes.some((n) => /less than one call/.test(n)));
  });

  test("a token budget too small for one call still allows one", () => {
    assert.equal(
      plan({ rps: 5, latencyS: 1, tokensPerRequest: 10_000, tpm: 60_000 }).config.max_concurrent_requests,
      1,
    );
  });
});

describe("plan inputs", () => {
  test("each bad or missing number is a PlanInputError naming the flag, the expectation and the value", () => {
    const cases: Array<[Record<string, string>, string, string | undefined]> = [
      [{ "latency-s": "4" }, "--rps", undefined],
      [{ rps: "0", "latency-s": "4" }, "--rps", "0"],
      [{ rps: "1", "latency-s": "" }, "--latency-s", ""],
      [{ rps: "1", "latency-s": "1", tpm: "x" }, "--tpm", "x"],
      [{ rps: "1", "latency-s": "1", tpm: "100" }, "--tokens-per-request", undefined],
      [{ rps: "1", "latency-s": "1", "per-pod-max": "4" }, "--pods", undefined],
      [{ rps: "1", "latency-s": "1", pods: "0", "per-pod-max": "4" }, "--pods", "0"],
    ];
    for (const [flags, flag, received] of cases) {
      assert.throws(
        () => planInput(flags),
        (e: unknown) => e instanceof PlanInputError && e.flag === flag && e.received === received,
        JSON.stringify(flags),
      );
    }
  });

  test("measured values fill what the flags leave out; a flag wins", () => {
    const input = planInput({ rps: "30" }, { rps: 10, latencyS: 2, tokensPerRequest: 500 });
    assert.deepEqual(input, { rps: 30, latencyS: 2, tokensPerRequest: 500 });
  });
});

describe("plan --from-metrics", () => {
  test("measures a vLLM pod under load: rps, Little's-law latency, tokens per request", async () => {
    const sim = await startSim({ maxNumSeqs: 4, serviceMs: 20, jitterSigma: 0, defaultOutputTokens: 16 });
    let stop = false;
    // 40 characters of prompt: 10 prompt tokens + 16 generated per request.
    const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(40) }] });
    const loop = async () => {
      while (!stop) {
        const res = await request(`${sim.url}/v1/chat/completions`, { method: "POST", body });
        await res.body.text();
      }
    };
    const loops = [loop(), loop(), loop(), loop()];
    try {
      const m = await measure(sim.url, 600);
      assert.equal(m.source, "vllm");
      assert.equal(m.url, `${sim.url}/metrics`);
      assert.ok(m.rps > 0 && m.latency_s > 0);
      assert.equal(m.tokens_per_request, 26);
      assert.ok(m.notes.some((n) => /Little's law/.test(n)));
    } finally {
      stop = true;
      await Promise.all(loops);
      await sim.close();
    }
  });

  test("measures a sluice gateway: answer latency less queue wait, tokens per answer", async () => {
    // Two scrapes' worth of counters: 100 answers (40 s in all, 10 s of it queued), 20 refused, 5,000 tokens.
    const scrape = (n: number) =>
      [
        `sluice_request_duration_seconds_count{lane="m",outcome="ok"} ${100 * n}`,
        `sluice_request_duration_seconds_sum{lane="m",outcome="ok"} ${40 * n}`,
        `sluice_request_duration_seconds_count{lane="m",outcome="refused"} ${20 * n}`,
        `sluice_request_duration_seconds_count{lane="m",outcome="client_error"} ${7 * n}`,
        `sluice_lane_queue_wait_seconds_count{lane="m",priority="default"} ${100 * n}`,
        `sluice_lane_queue_wait_seconds_sum{lane="m",priority="default"} ${10 * n}`,
        `sluice_tokens_total{lane="m",kind="prompt"} ${3000 * n}`,
        `sluice_tokens_total{lane="m",kind="completion"} ${2000 * n}`,
        "",
      ].join("\n");
    let reads = 0;
    const server = createServer((_req, res) => res.end(scrape(reads++ === 0 ? 0 : 1)));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const m = await measure(url, 100);
      assert.equal(m.source, "sluice");
      assert.ok(Math.abs(m.latency_s - 0.3) < 1e-9, `0.4 s per answer less 0.1 s queued, got ${m.latency_s}`);
      assert.equal(m.tokens_per_request, 50);
      assert.ok(m.rps > 0);
      // And through the CLI: the measured numbers become the plan's inputs.
      const out: string[] = [];
      reads = 0;
      assert.equal(
        await main(["--from-metrics", url, "--sample-s", "0.1", "--json"], { out: (t) => out.push(t) }),
        0,
      );
      const p = JSON.parse(out.join(""));
      assert.equal(p.measured.source, "sluice");
      assert.ok(Math.abs(p.input.latencyS - 0.3) < 1e-9);
    } finally {
      server.close();
    }
  });

  test("a URL serving no metrics it knows, or a window with nothing finished, is a MeasureError (exit 1)", async () => {
    const server = createServer((_req, res) => res.end("something_else 1\n"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
    const sim = await startSim();
    try {
      await assert.rejects(
        measure(url, 50),
        (e: unknown) => e instanceof MeasureError && /neither sluice's nor vLLM's/.test(e.message),
      );
      await assert.rejects(measure(sim.url, 50), /no request finished in the .* window/);
      const err: string[] = [];
      assert.equal(await main(["--from-metrics", url, "--sample-s", "0.05"], { err: (t) => err.push(t) }), 1);
      assert.match(err.join(""), /--from-metrics .*neither/);
    } finally {
      server.close();
      await sim.close();
    }
  });

  test("parses Prometheus text: labels with escapes, comments skipped", () => {
    const s = parsePrometheus(
      '# HELP x y\nx{a="1",b="q\\"z"} 2.5\nvllm:num_requests_running{model_name="m"} 3\n',
    );
    assert.deepEqual(s, [
      { name: "x", labels: { a: "1", b: 'q\\"z' }, value: 2.5 },
      { name: "vllm:num_requests_running", labels: { model_name: "m" }, value: 3 },
    ]);
  });
});
