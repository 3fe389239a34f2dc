import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Registry } from "prom-client";
import { flush } from "../../test/helpers/index.js";
import { ManualClock } from "../core/clock.js";
import { QueueFullError, QueueTimeoutError } from "../core/errors.js";
import type { Lease } from "../core/lease.js";
import { Governor } from "../governor/governor.js";
import {
  METRICS,
  MetricIds,
  type MetricName,
  QUEUE_WAIT_BUCKETS_S,
  REFUSAL_REASONS,
  UPSTREAM_FAILURE_CAUSES,
} from "./names.js";
import { PrometheusMetrics } from "./prometheus.js";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses Prometheus text into samples (enough of the format for these tests). */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `unparsable line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

function value(samples: Sample[], name: string, labels: Record<string, string>): number | undefined {
  const keys = Object.keys(labels);
  return samples.find(
    (s) =>
      s.name === name &&
      Object.keys(s.labels).length === keys.length &&
      keys.every((k) => s.labels[k] === labels[k]),
  )?.value;
}

function setup() {
  const clock = new ManualClock();
  const gov = new Governor({
    clock,
    random: () => 0.5,
    groups: { gb10: { limit: 8 } },
    // A key of a tenant, both with budgets: the key and tenant gauges and their buckets' series.
    keys: { "team-a": { maxInflight: 4, tpm: 30_000, tenant: "team" } },
    tenants: { team: { tpm: 60_000, rpm: 600 } },
    // Token and request buckets on a lane and on an account (their gauges come from the snapshot).
    accounts: { prov: { maxInflight: 4, tpm: 50_000, rpm: 500 } },
    lanes: {
      chat: {
        tpm: 100_000,
        rpm: 1000,
        limit: 2,
        reserve: 0,
        queueLimit: 1,
        queueTimeoutMs: 1000,
        pods: [{ id: "http://pod-a:8000", maxInflight: 2, gpuGroup: "gb10" }],
        adaptive: { floor: 1 },
      },
      // Two fixed-width pods: a congestion answer opens one breaker at once (DESIGN §1.4).
      ocr: {
        account: "prov",
        limit: 2,
        pods: [
          { id: "http://ocr-a:9000", maxInflight: 1 },
          { id: "http://ocr-b:9000", maxInflight: 1 },
        ],
        adaptive: false,
      },
    },
  });
  const metrics = new PrometheusMetrics(gov);
  return { clock, gov, metrics };
}

describe("PrometheusMetrics", () => {
  test("bucket levels and the account's in flight, cap and throttling come from the snapshot", async () => {
    const { gov, metrics } = setup();
    const chat = await gov.acquire("chat", { tokens: 1000 });
    const ocr = await gov.acquire("ocr", { tokens: 2000 });
    const samples = parse(await metrics.render());
    const bucket = (budget: string, unit: string) =>
      value(samples, "sluice_bucket_available", { budget, unit });
    assert.deepEqual(
      [
        bucket("chat", "tokens"),
        bucket("chat", "requests"),
        bucket("account:prov", "tokens"),
        bucket("account:prov", "requests"),
      ],
      [99_000, 999, 48_000, 499],
    );
    assert.equal(
      value(samples, "sluice_bucket_per_minute", { budget: "account:prov", unit: "tokens" }),
      50_000,
    );
    // The interactive reserve: chat keeps none (reserve 0); the account keeps ocr's share (1 of 2 slots).
    const reserve = (budget: string, unit: string) =>
      value(samples, "sluice_bucket_reserve", { budget, unit });
    assert.deepEqual(
      [reserve("chat", "tokens"), reserve("account:prov", "tokens"), reserve("account:prov", "requests")],
      [0, 25_000, 250],
    );
    assert.equal(value(samples, "sluice_account_inflight", { account: "prov" }), 1);
    assert.equal(value(samples, "sluice_account_cap", { account: "prov" }), 4);
    assert.equal(value(samples, "sluice_account_throttled_per_minute", { account: "prov" }), 0);
    chat.release();
    ocr.release();
  });

  test("exports every §4 name with its declared labels after some activity", async () => {
    const { clock, gov, metrics } = setup();
    const a = await gov.acquire("chat", { priority: "default" });
    const b = await gov.acquire("chat", { priority: "interactive", key: "team-a" });
    const timedOut = gov.acquire("chat", { priority: "bulk" }).catch((e) => e);
    await assert.rejects(gov.acquire("chat", { priority: "bulk" }), QueueFullError);
    clock.advance(1000);
    assert.ok((await timedOut) instanceof QueueTimeoutError);
    const waiter = gov.acquire("chat", { priority: "default" });
    clock.advance(300);
    a.succeeded();
    const c = await waiter;
    c.release();
    const ocr = await gov.acquire("ocr");
    ocr.failed(503); // congestion on a fixed-width pod: its breaker opens
    metrics.refusal("unauthorized");
    metrics.wouldRefuse("queue_full");
    metrics.upstreamOverload("http://pod-a:8000", 503);
    metrics.upstreamFailure("http://pod-a:8000", "refused");
    metrics.tokens("chat", "prompt", 120);
    metrics.tokens("chat", "completion", 30);
    metrics.storeError();
    metrics.upstreamTtfb("chat", 42);
    metrics.request({ lane: "chat", key: "team-a", status: 200, outcome: "ok", seconds: 0.42 });
    metrics.request({ lane: "chat", key: "team-a", status: 429, outcome: "refused", seconds: 0.001 });
    metrics.request({
      lane: undefined,
      key: undefined,
      status: 401,
      outcome: "client_error",
      seconds: 0.001,
    });

    const samples = parse(await metrics.render());
    for (const [name, def] of Object.entries(METRICS) as [MetricName, (typeof METRICS)[MetricName]][]) {
      const series = def.kind === "histogram" ? `${name}_bucket` : name;
      const found = samples.filter((s) => s.name === series);
      assert.ok(found.length > 0, `${series} is missing`);
      const expected = [...def.labels, ...(def.kind === "histogram" ? ["le"] : [])].sort();
      for (const s of found) assert.deepEqual(Object.keys(s.labels).sort(), expected, series);
    }

    assert.equal(value(samples, MetricIds.refusalsTotal, { lane: "chat", reason: "queue_full" }), 1);
    assert.equal(value(samples, MetricIds.refusalsTotal, { lane: "chat", reason: "queue_timeout" }), 1);
    assert.equal(value(samples, MetricIds.refusalsTotal, { lane: "-", reason: "unauthorized" }), 1);
    assert.equal(value(samples, MetricIds.refusalsTotal, { lane: "chat", reason: "draining" }), 0);
    assert.equal(value(samples, MetricIds.laneQueueTimeoutsTotal, { lane: "chat" }), 1);
    assert.equal(value(samples, MetricIds.wouldRefuseTotal, { lane: "-", reason: "queue_full" }), 1);
    const overloads = { pod: "http://pod-a:8000", status: "503" };
    assert.equal(value(samples, MetricIds.upstreamOverloadsTotal, overloads), 1);
    const refused = { pod: "http://pod-a:8000", cause: "refused" };
    assert.equal(value(samples, MetricIds.upstreamFailuresTotal, refused), 1);
    assert.equal(value(samples, MetricIds.tokensTotal, { lane: "chat", kind: "prompt" }), 120);
    assert.equal(value(samples, MetricIds.storeErrorsTotal, {}), 1);
    assert.equal(value(samples, MetricIds.requestsTotal, { lane: "-", status: "401" }), 1);
    // Answers and refusals are separate series: a refusal's microseconds never reach "ok".
    const duration = `${MetricIds.requestDurationSeconds}_count`;
    assert.equal(value(samples, duration, { lane: "chat", outcome: "ok" }), 1);
    assert.equal(value(samples, duration, { lane: "chat", outcome: "refused" }), 1);
    assert.equal(value(samples, MetricIds.keyRequestsTotal, { key: "team-a", outcome: "ok" }), 1);
    assert.equal(value(samples, MetricIds.keyRequestsTotal, { key: "team-a", outcome: "refused" }), 1);
    assert.equal(value(samples, MetricIds.keyRequestsTotal, { key: "-", outcome: "client_error" }), 1);
    assert.equal(value(samples, MetricIds.keyInflight, { key: "team-a" }), 1, "the key's call b still holds");
    // The queued default call waited 0.3 s: above the 0.1 bucket, inside 0.5.
    const wait = `${MetricIds.laneQueueWaitSeconds}_bucket`;
    assert.equal(value(samples, wait, { lane: "chat", priority: "default", le: "0.1" }), 1);
    assert.equal(value(samples, wait, { lane: "chat", priority: "default", le: "0.5" }), 2);
    assert.equal(
      value(samples, `${MetricIds.laneQueueWaitSeconds}_count`, { lane: "chat", priority: "interactive" }),
      1,
    );
    const les = samples
      .filter((s) => s.name === wait && s.labels.lane === "chat" && s.labels.priority === "default")
      .map((s) => s.labels.le);
    assert.deepEqual(les, [...QUEUE_WAIT_BUCKETS_S.map(String), "+Inf"]);
    // The 503 opened that pod's breaker: 2 = open; the other stays closed.
    assert.equal(value(samples, MetricIds.breakerState, { pod: ocr.pod! }), 2);
    const other = ocr.pod === "http://ocr-a:9000" ? "http://ocr-b:9000" : "http://ocr-a:9000";
    assert.equal(value(samples, MetricIds.breakerState, { pod: other }), 0);
    b.release();
    metrics.close();
  });

  test("reads the gauges from the snapshot at scrape time", async () => {
    const { gov, metrics } = setup();
    const held: Lease[] = [await gov.acquire("chat"), await gov.acquire("chat")];
    const queued = gov.acquire("chat", { priority: "bulk" });
    let samples = parse(await metrics.render());
    const snap = gov.snapshot();
    assert.equal(value(samples, MetricIds.laneInflight, { lane: "chat" }), snap.lanes[0]!.inflight);
    assert.equal(value(samples, MetricIds.laneInflight, { lane: "chat" }), 2);
    assert.equal(value(samples, MetricIds.laneLimit, { lane: "chat" }), 2);
    assert.equal(value(samples, MetricIds.laneQueueDepth, { lane: "chat", priority: "bulk" }), 1);
    assert.equal(value(samples, MetricIds.laneQueueDepth, { lane: "chat", priority: "interactive" }), 0);
    assert.equal(value(samples, MetricIds.podInflight, { pod: "http://pod-a:8000" }), 2);
    assert.equal(value(samples, MetricIds.podWidth, { pod: "http://pod-a:8000" }), snap.pods[0]!.width);
    assert.equal(value(samples, MetricIds.podCeiling, { pod: "http://pod-a:8000" }), 2);
    assert.equal(value(samples, MetricIds.breakerState, { pod: "http://pod-a:8000" }), 0);
    assert.equal(value(samples, MetricIds.groupInflight, { group: "gb10" }), 2);

    held[0]!.succeeded();
    held[1]!.succeeded();
    (await queued).release();
    await flush();
    samples = parse(await metrics.render());
    assert.equal(value(samples, MetricIds.laneInflight, { lane: "chat" }), 0);
    assert.equal(value(samples, MetricIds.laneQueueDepth, { lane: "chat", priority: "bulk" }), 0);
    assert.equal(value(samples, MetricIds.groupInflight, { group: "gb10" }), 0);
    metrics.close();
  });

  test("counts a governor refusal once even when the gateway reports it again", async () => {
    const { gov, metrics } = setup();
    await gov.acquire("chat");
    await gov.acquire("chat");
    void gov.acquire("chat").catch(() => {});
    const error = (await gov.acquire("chat").catch((e: unknown) => e)) as QueueFullError;
    assert.ok(error instanceof QueueFullError);
    metrics.refusal(error, "chat");
    metrics.refusal(new QueueFullError("chat", 2, 1, 1, 2, 1000), "chat"); // a pre-body refusal, not the governor's
    const samples = parse(await metrics.render());
    assert.equal(value(samples, MetricIds.refusalsTotal, { lane: "chat", reason: "queue_full" }), 2);
    metrics.close();
  });

  test("counts a shed waiter once when the gateway reports its error", async () => {
    const gov = new Governor({
      clock: new ManualClock(),
      lanes: { L: { limit: 1, reserve: 0, queueLimit: 1 } },
    });
    const metrics = new PrometheusMetrics(gov);
    const held = await gov.acquire("L");
    const shed = gov.acquire("L", { priority: "bulk" }).catch((e: unknown) => e);
    const winner = gov.acquire("L", { priority: "interactive" });
    const error = await shed;
    assert.ok(error instanceof QueueFullError && error.reason === "shed");
    // Whether or not the governor reported it, the gateway reports every refusal it answers.
    metrics.refusal(error);
    const samples = parse(await metrics.render());
    assert.equal(value(samples, MetricIds.refusalsTotal, { lane: "L", reason: "queue_full" }), 1);
    held.release();
    (await winner).release();
    metrics.close();
  });

  test("does not count governor refusals on shadow lanes; the gateway reports would-refuse", async () => {
    const gov = new Governor({
      clock: new ManualClock(),
      lanes: { live: { limit: 1, queueLimit: 0 }, trial: { limit: 1, queueLimit: 0 } },
    });
    const metrics = new PrometheusMetrics(gov, { shadow: (lane) => lane === "trial" });
    await gov.acquire("live");
    await gov.acquire("trial");
    await assert.rejects(gov.acquire("live"), QueueFullError);
    const error = await gov.acquire("trial").catch((e: unknown) => e);
    assert.ok(error instanceof QueueFullError);
    metrics.wouldRefuse(error, "trial");
    metrics.wouldRefuse(error, "trial"); // reported twice, counted once
    const samples = parse(await metrics.render());
    assert.equal(value(samples, MetricIds.refusalsTotal, { lane: "live", reason: "queue_full" }), 1);
    assert.equal(value(samples, MetricIds.refusalsTotal, { lane: "trial", reason: "queue_full" }), 0);
    assert.equal(value(samples, MetricIds.wouldRefuseTotal, { lane: "trial", reason: "queue_full" }), 1);
    metrics.close();
  });

  test("several instances in one process keep separate registries", async () => {
    const one = setup();
    const two = setup();
    one.metrics.refusal("draining");
    const a = parse(await one.metrics.render());
    const b = parse(await two.metrics.render());
    assert.equal(value(a, MetricIds.refusalsTotal, { lane: "-", reason: "draining" }), 1);
    assert.equal(value(b, MetricIds.refusalsTotal, { lane: "-", reason: "draining" }), 0);
    assert.match(one.metrics.contentType, /^text\/plain; version=0\.0\.4/);
    one.metrics.close();
    two.metrics.close();
  });

  test("honours a given registry and prefix, and close() removes its metrics", async () => {
    const registry = new Registry();
    const gov = new Governor({ clock: new ManualClock(), lanes: { chat: { limit: 1 } } });
    const metrics = new PrometheusMetrics(gov, { registry, prefix: "acme_" });
    const text = await registry.metrics();
    assert.match(text, /^acme_lane_inflight\{lane="chat"\} 0$/m);
    assert.doesNotMatch(text, /sluice_/);
    metrics.close();
    metrics.close();
    assert.equal(registry.getMetricsAsArray().length, 0);
    // Closed: events no longer reach the (removed) metrics.
    await gov.acquire("chat");
    assert.equal(await registry.metrics(), "\n");
  });

  test("starts every known refusal reason on every lane, and every failure cause on every pod, at 0", async () => {
    const { metrics } = setup();
    const samples = parse(await metrics.render());
    for (const lane of ["-", "chat", "ocr"])
      for (const reason of REFUSAL_REASONS)
        assert.equal(value(samples, MetricIds.refusalsTotal, { lane, reason }), 0, `${lane} ${reason}`);
    for (const pod of ["http://pod-a:8000", "http://ocr-a:9000", "http://ocr-b:9000"])
      for (const cause of UPSTREAM_FAILURE_CAUSES)
        assert.equal(value(samples, MetricIds.upstreamFailuresTotal, { pod, cause }), 0, `${pod} ${cause}`);
    metrics.close();
  });

  test("startSeries() starts the series of lanes and pods added since, keeping the counts", async () => {
    const gov = new Governor({
      clock: new ManualClock(),
      lanes: { chat: { limit: 1, pods: [{ id: "http://a:1", maxInflight: 1 }] } },
    });
    const metrics = new PrometheusMetrics(gov);
    metrics.upstreamFailure("http://a:1", "reset");
    gov.reconfigure({
      lanes: {
        chat: { limit: 1, pods: [{ id: "http://a:1", maxInflight: 1 }] },
        ocr: { limit: 1, pods: [{ id: "http://b:2", maxInflight: 1 }] },
      },
    });
    metrics.startSeries();
    const samples = parse(await metrics.render());
    assert.equal(value(samples, MetricIds.upstreamFailuresTotal, { pod: "http://a:1", cause: "reset" }), 1);
    assert.equal(value(samples, MetricIds.upstreamFailuresTotal, { pod: "http://b:2", cause: "reset" }), 0);
    assert.equal(value(samples, MetricIds.refusalsTotal, { lane: "ocr", reason: "queue_full" }), 0);
    metrics.close();
  });

  test("labels a governor refusal of a name that is no lane (the admission bound) as lane -", async () => {
    const gov = new Governor({
      clock: new ManualClock(),
      admission: { maxInflight: 1, maxQueued: 0 },
      lanes: { chat: { limit: 1 } },
    });
    const metrics = new PrometheusMetrics(gov, { isLane: (lane) => lane === "chat" });
    gov.enter();
    const refusal = gov.admissionRefusal();
    assert.ok(refusal instanceof QueueFullError);
    metrics.refusal(refusal, "chat"); // already counted by the event, under "-"
    const samples = parse(await metrics.render());
    assert.equal(value(samples, MetricIds.refusalsTotal, { lane: "-", reason: "queue_full" }), 1);
    assert.equal(value(samples, MetricIds.refusalsTotal, { lane: "chat", reason: "queue_full" }), 0);
    gov.leave();
    metrics.close();
  });
});
