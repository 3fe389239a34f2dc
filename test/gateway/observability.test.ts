/**
 * Issue 8, items 8 and 9: failures are visible and the metrics answer what a Grafana user asks.
 * A dead pod produces a warn line (its breaker's transition, and the request that met it), metric
 * samples (`sluice_upstream_failures_total{pod,cause}`) and an entry in `/readyz`; a refusal's
 * latency is its own `outcome` series; refusals carry their lane; keys have their own series;
 * the request line carries the bytes actually sent, the method, the path, and the lane that
 * served. Real sockets, real sims, a real dead port.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import {
  assertNothingLeft,
  call,
  chat,
  LogCapture,
  model,
  redispatchOn,
  type Stack,
  SUITE,
  sha256hex,
  startStack,
  waitFor,
} from "./helpers.js";
import { answerStatus, type RawPod, startRawPod } from "./raw-pod.js";

/** The value of one Prometheus sample with exactly these labels (in the exported order). */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const inner = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(",");
  const prefix = inner === "" ? `${name} ` : `${name}{${inner}} `;
  const line = text.split("\n").find((l) => l.startsWith(prefix));
  return line === undefined ? undefined : Number(line.slice(prefix.length));
}

const metricsOf = async (stack: Stack): Promise<string> => (await call(stack.url, "/metrics")).text;

/** Log records whose message is `msg`. */
const linesOf = (log: LogCapture, msg: string) => log.records().filter((r) => r.msg === msg);

/** pino's numeric levels. */
const WARN = 40;
const DEBUG = 20;

/** Sends calls until `pod`'s breaker is open (bounded: each call is one attempt at most per pod). */
async function tripBreaker(stack: Stack, lane: string, pod: string): Promise<void> {
  for (let i = 0; i < 10; i++) {
    await chat(stack.url, lane, { content: `trip ${i}` });
    if (stack.gateway.governor.snapshot().pods.find((p) => p.id === pod)?.breaker === "open") return;
  }
  assert.fail(`the breaker of ${pod} did not open`);
}

describe("a dead pod beside a healthy one", SUITE, () => {
  const log = new LogCapture();
  let stack: Stack;
  let dead: string;

  before(async () => {
    stack = await startStack({
      sims: [
        { maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 },
        { maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 },
      ],
      logger: pino({ level: "info" }, log.stream),
      // A long cooldown: no half-open probe during the test.
      config: (urls) => ({
        models: [
          model("m", urls, { breaker: { fail_threshold: 1, base_cooldown_s: 60, max_cooldown_s: 60 } }, 2),
        ],
      }),
    });
    dead = stack.sims[0]!.url;
    await stack.sims[0]!.close(); // its port now refuses connections
    await tripBreaker(stack, "m", dead);
  });
  after(() => stack.close());

  test("its breaker's opening is a warn line naming the pod, its lanes and the cooldown", () => {
    const opened = linesOf(log, "breaker closed → open");
    assert.equal(opened.length, 1, log.text);
    const line = opened[0]!;
    assert.equal(line.level, WARN);
    assert.equal(line.pod, dead);
    assert.deepEqual(line.lanes, ["m"]);
    assert.equal(line.from, "closed");
    assert.equal(line.to, "open");
    const cooldown = line.cooldown_s as number;
    assert.ok(cooldown >= 48 && cooldown <= 72, `cooldown ${cooldown} s ≈ 60 s ± 20 %`);
    assert.equal(line.trips, 1);
  });

  test("the request that met it logs at warn with the failed attempt and its detail", () => {
    const failed = linesOf(log, "request").filter((r) => r.failures !== undefined);
    assert.ok(failed.length >= 1, log.text);
    for (const r of failed) {
      assert.equal(r.level, WARN);
      const failures = r.failures as { pod: string; cause: string; detail?: string }[];
      assert.deepEqual(
        failures.map((f) => [f.pod, f.cause]),
        [[dead, "refused"]],
      );
      assert.equal(typeof failures[0]!.detail, "string", "the log keeps the detail the client never sees");
    }
  });

  test("sluice_upstream_failures_total counts it by pod and cause; the live pod's series stays 0", async () => {
    const text = await metricsOf(stack);
    const refused = sample(text, "sluice_upstream_failures_total", { pod: dead, cause: "refused" });
    assert.ok(refused !== undefined && refused >= 1, `refused failures of the dead pod: ${refused}`);
    const live = stack.sims[1]!.url;
    for (const cause of ["refused", "reset", "timeout", "status"])
      assert.equal(sample(text, "sluice_upstream_failures_total", { pod: live, cause }), 0, cause);
    assert.equal(sample(text, "sluice_breaker_state", { pod: dead }), 2);
  });

  test("/readyz stays ready (the lane has a live pod) and lists the open pod", async () => {
    const a = await call(stack.url, "/readyz");
    assert.equal(a.status, 200, a.text);
    const body = JSON.parse(a.text);
    assert.equal(body.ready, true);
    assert.deepEqual(body.lanes_down, []);
    assert.equal(body.open_pods.length, 1);
    assert.equal(body.open_pods[0].pod, dead);
    assert.deepEqual(body.open_pods[0].lanes, ["m"]);
    assert.equal(body.open_pods[0].breaker, "open");
    assert.ok(body.open_pods[0].reopens_in_s > 0);
    assert.deepEqual(body.paused_pods, []);
    await assertNothingLeft(stack);
  });
});

describe("a lane whose only pod is dead", SUITE, () => {
  const log = new LogCapture();
  let stack: Stack;
  let dead: string;

  before(async () => {
    stack = await startStack({
      sims: [
        { maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 },
        { maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 },
      ],
      // debug: a refusal's own line is written at debug (at info refusals are counted, refusal-log.test.ts)
      logger: pino({ level: "debug" }, log.stream),
      config: (urls) => ({
        models: [
          model("solo", [urls[0]!], { breaker: { base_cooldown_s: 60, max_cooldown_s: 60 } }, 2),
          model("other", [urls[1]!], {}, 2),
        ],
      }),
    });
    dead = stack.sims[0]!.url;
    await stack.sims[0]!.close();
  });
  after(() => stack.close());

  test("the failed call is outcome upstream_error and the refusals after it are outcome refused, lane solo", async () => {
    const first = await chat(stack.url, "solo");
    assert.equal(first.status, 502, first.text);
    const second = await chat(stack.url, "solo");
    assert.equal(second.status, 503, second.text);
    const ok = await chat(stack.url, "other");
    assert.equal(ok.status, 200, ok.text);

    const text = await metricsOf(stack);
    const count = (lane: string, outcome: string) =>
      sample(text, "sluice_request_duration_seconds_count", { lane, outcome });
    assert.equal(count("solo", "upstream_error"), 1);
    assert.equal(count("solo", "refused"), 1);
    assert.equal(count("solo", "ok"), undefined, "no answer latency was recorded for solo");
    assert.equal(count("other", "ok"), 1);
    assert.equal(sample(text, "sluice_refusals_total", { lane: "solo", reason: "upstream_unavailable" }), 1);
    assert.equal(sample(text, "sluice_refusals_total", { lane: "other", reason: "upstream_unavailable" }), 0);
    const failures = sample(text, "sluice_upstream_failures_total", { pod: dead, cause: "refused" });
    assert.ok(failures !== undefined && failures >= 1, `refused failures: ${failures}`);

    const failed = linesOf(log, "request").find((r) => r.status === 502)!;
    assert.equal(failed.level, WARN);
    assert.equal(failed.outcome, "upstream_error");
    const refused = linesOf(log, "request").find((r) => r.status === 503)!;
    assert.equal(refused.level, DEBUG);
    assert.equal(refused.outcome, "refused");
    assert.equal(refused.reason, "upstream_unavailable");
  });

  test("/readyz says not ready, naming the lane that is down and its open pod", async () => {
    const a = await call(stack.url, "/readyz");
    assert.equal(a.status, 503, a.text);
    const body = JSON.parse(a.text);
    assert.equal(body.ready, false);
    assert.equal(body.draining, false);
    assert.deepEqual(body.lanes_down, ["solo"]);
    assert.deepEqual(
      body.open_pods.map((p: { pod: string; lanes: string[] }) => [p.pod, p.lanes]),
      [[dead, ["solo"]]],
    );
    await assertNothingLeft(stack);
  });
});

describe("fallback: the log line and the metrics name the lane that served", SUITE, () => {
  const log = new LogCapture();
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [
        { maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 },
        { maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 },
      ],
      logger: pino({ level: "info" }, log.stream),
      config: (urls) => ({
        models: [
          model(
            "big",
            [urls[0]!],
            { fallback: "small", breaker: { base_cooldown_s: 60, max_cooldown_s: 60 } },
            2,
          ),
          model("small", [urls[1]!], {}, 2),
        ],
      }),
    });
    await stack.sims[0]!.close();
    await tripBreaker(stack, "big", stack.sims[0]!.url);
  });
  after(() => stack.close());

  test("a call for big served by small logs lane small, fallback_from big, and counts under small", async () => {
    const before = await metricsOf(stack);
    const a = await chat(stack.url, "big", { content: "to the fallback" });
    assert.equal(a.status, 200, a.text);
    assert.equal(a.headers["x-sluice-lane"], "small");
    const id = a.headers["x-sluice-request-id"];
    const line = linesOf(log, "request").find((r) => r.request_id === id)!;
    assert.equal(line.lane, "small");
    assert.equal(line.fallback_from, "big");
    assert.equal(line.pod, stack.sims[1]!.url);
    assert.equal(line.outcome, "ok");

    const text = await metricsOf(stack);
    const ok = (t: string, lane: string) =>
      sample(t, "sluice_request_duration_seconds_count", { lane, outcome: "ok" }) ?? 0;
    assert.equal(ok(text, "small") - ok(before, "small"), 1);
    assert.equal(ok(text, "big"), 0);
    await assertNothingLeft(stack);
  });
});

describe("refusals and keys", SUITE, () => {
  const TOKEN = "sk-team-a-0123456789";
  const log = new LogCapture();
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 }],
      // debug: a refusal's own line is written at debug (at info refusals are counted, refusal-log.test.ts)
      logger: pino({ level: "debug" }, log.stream),
      config: ([pod]) => ({
        auth: { keys: [{ id: "team-a", sha256: sha256hex(TOKEN), max_inflight: 4 }] },
        models: [model("m", [pod!])],
      }),
    });
  });
  after(() => stack.close());

  const auth = { authorization: `Bearer ${TOKEN}` };

  test("a 429's line carries the bytes sent, the method and the path; its latency is outcome refused", async () => {
    stack.sims[0]!.setProfile({ serviceMs: 60_000 });
    const hold = new AbortController();
    const holding = chat(stack.url, "m", { headers: auth, signal: hold.signal }).catch((e: unknown) => e);
    await waitFor("the held call to run", () => stack.sims[0]!.stats().running === 1);

    const during = await metricsOf(stack);
    assert.equal(sample(during, "sluice_key_inflight", { key: "team-a" }), 1);

    const refused = await chat(stack.url, "m", { headers: auth, content: "no room" });
    assert.equal(refused.status, 429, refused.text);
    const line = linesOf(log, "request").find(
      (r) => r.request_id === refused.headers["x-sluice-request-id"],
    )!;
    assert.equal(line.status, 429);
    assert.equal(line.bytes, Buffer.byteLength(refused.text), "the bytes the client received");
    assert.ok((line.bytes as number) > 0);
    assert.equal(line.method, "POST");
    assert.equal(line.path, "/v1/chat/completions");
    assert.equal(line.lane, "m");
    assert.equal(line.key, "team-a");
    assert.equal(line.outcome, "refused");
    assert.equal(line.reason, "queue_full");

    hold.abort();
    await holding;
    stack.sims[0]!.setProfile({ serviceMs: 1 });
    await waitFor("the held call to settle", () =>
      linesOf(log, "request").some((r) => r.outcome === "client_gone"),
    );

    const text = await metricsOf(stack);
    assert.equal(sample(text, "sluice_key_inflight", { key: "team-a" }), 0);
    assert.equal(sample(text, "sluice_refusals_total", { lane: "m", reason: "queue_full" }), 1);
    assert.equal(sample(text, "sluice_request_duration_seconds_count", { lane: "m", outcome: "refused" }), 1);
    assert.equal(
      sample(text, "sluice_request_duration_seconds_count", { lane: "m", outcome: "ok" }),
      undefined,
    );
    assert.equal(sample(text, "sluice_key_requests_total", { key: "team-a", outcome: "refused" }), 1);
    assert.equal(sample(text, "sluice_key_requests_total", { key: "team-a", outcome: "client_gone" }), 1);
    await assertNothingLeft(stack);
  });

  test("an answer's line counts its bytes; a query string never reaches the log", async () => {
    const a = await call(stack.url, "/v1/chat/completions?api_key=secret-in-query", {
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
      headers: auth,
    });
    assert.equal(a.status, 200, a.text);
    const line = linesOf(log, "request").find((r) => r.request_id === a.headers["x-sluice-request-id"])!;
    assert.equal(line.bytes, Buffer.byteLength(a.text));
    assert.equal(line.path, "/v1/chat/completions");
    assert.doesNotMatch(log.text, /secret-in-query/);
    const text = await metricsOf(stack);
    assert.equal(sample(text, "sluice_key_requests_total", { key: "team-a", outcome: "ok" }), 1);
  });

  test("an unauthenticated call counts under key - and lane -, outcome client_error", async () => {
    const a = await chat(stack.url, "m", { headers: { authorization: "Bearer sk-wrong-0123456789" } });
    assert.equal(a.status, 401);
    const text = await metricsOf(stack);
    assert.equal(sample(text, "sluice_key_requests_total", { key: "-", outcome: "client_error" }), 1);
    assert.equal(sample(text, "sluice_refusals_total", { lane: "-", reason: "unauthorized" }), 1);
    assert.equal(
      sample(text, "sluice_request_duration_seconds_count", { lane: "-", outcome: "client_error" }),
      1,
    );
    await assertNothingLeft(stack);
  });
});

describe("an overloaded pod whose calls go to another", SUITE, () => {
  let busy: RawPod;
  let stack: Stack;

  before(async () => {
    busy = await startRawPod(answerStatus(503));
    stack = await startStack({
      sims: [{ maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 }],
      // The busy pod first: an idle lane picks it first.
      config: ([pod]) => ({
        models: [
          redispatchOn(
            [503],
            model("m", [busy.url, pod!], { breaker: { base_cooldown_s: 60, max_cooldown_s: 60 } }, 2),
          ),
        ],
      }),
    });
  });
  after(async () => {
    await stack.close();
    await busy.close();
  });

  test("its 503s count under that pod, in overloads and failures, not under the pod that answered", async () => {
    for (let i = 0; i < 3; i++) assert.equal((await chat(stack.url, "m", { content: `c ${i}` })).status, 200);
    assert.ok(busy.calls.length >= 1, "the busy pod was tried");
    const text = await metricsOf(stack);
    const live = stack.sims[0]!.url;
    assert.equal(
      sample(text, "sluice_upstream_overloads_total", { pod: busy.url, status: "503" }),
      busy.calls.length,
    );
    assert.equal(
      sample(text, "sluice_upstream_failures_total", { pod: busy.url, cause: "status" }),
      busy.calls.length,
    );
    assert.equal(sample(text, "sluice_upstream_overloads_total", { pod: live, status: "503" }), undefined);
    assert.equal(sample(text, "sluice_upstream_failures_total", { pod: live, cause: "status" }), 0);
    assert.equal(sample(text, "sluice_request_duration_seconds_count", { lane: "m", outcome: "ok" }), 3);
    await assertNothingLeft(stack);
  });
});

/** A provider over its quota: every call is 429 with `Retry-After: 30`. */
async function overQuotaProvider(): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    req.resume();
    const body = JSON.stringify({
      error: { type: "requests", code: "rate_limit_exceeded", message: "quota" },
    });
    res.writeHead(429, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
      "retry-after": "30",
    });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe("/readyz and a provider's quota pause", SUITE, () => {
  let provider: Awaited<ReturnType<typeof overQuotaProvider>>;
  let stack: Stack;

  before(async () => {
    provider = await overQuotaProvider();
    stack = await startStack({
      sims: [{ maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 }],
      config: ([pod]) => ({
        models: [
          model("paid", [provider.url], {}, 2),
          model("fallen", [provider.url.replace("127.0.0.1", "localhost")], { fallback: "local" }, 2),
          model("local", [pod!], {}, 2),
        ],
      }),
    });
  });
  after(async () => {
    await stack.close();
    await provider.close();
  });

  test("a lane whose only pod is paused is down; a paused lane with a live fallback is not", async () => {
    assert.equal((await chat(stack.url, "paid")).status, 429);
    assert.equal((await chat(stack.url, "fallen")).status, 429);
    const a = await call(stack.url, "/readyz");
    assert.equal(a.status, 503, a.text);
    const body = JSON.parse(a.text);
    assert.deepEqual(body.lanes_down, ["paid"]);
    assert.deepEqual(body.open_pods, []);
    const paused = body.paused_pods as { pod: string; lanes: string[]; quota_paused_s: number }[];
    assert.deepEqual(paused.map((p) => p.lanes).sort(), [["fallen"], ["paid"]]);
    for (const p of paused) assert.ok(p.quota_paused_s > 20 && p.quota_paused_s <= 30, `${p.quota_paused_s}`);
    await assertNothingLeft(stack);
  });
});
