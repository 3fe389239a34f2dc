import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import type { Snapshot } from "../core/snapshot.js";
import { METRICS, MetricIds, QUEUE_WAIT_BUCKETS_S } from "./names.js";
import { type MetricSink, NoopSink } from "./sink.js";
import { writeSnapshotGauges } from "./snapshot-gauges.js";

// The contract's metrics, verbatim: name and labels.
const DESIGN_4 = {
  sluice_lane_inflight: ["lane"],
  sluice_lane_queue_depth: ["lane", "priority"],
  sluice_lane_queue_wait_seconds: ["lane", "priority"],
  sluice_lane_queue_timeouts_total: ["lane"],
  sluice_refusals_total: ["lane", "reason"],
  sluice_pod_width: ["pod"],
  sluice_pod_inflight: ["pod"],
  sluice_breaker_state: ["pod"],
  sluice_upstream_overloads_total: ["pod", "status"],
  sluice_upstream_failures_total: ["pod", "cause"],
  sluice_request_duration_seconds: ["lane", "outcome"],
  sluice_key_inflight: ["key"],
  sluice_key_requests_total: ["key", "outcome"],
  sluice_tokens_total: ["lane", "kind"],
  sluice_upstream_ttfb_seconds: ["lane"],
  sluice_group_inflight: ["group"],
  sluice_store_errors_total: [],
  sluice_would_refuse_total: ["lane", "reason"],
};

describe("metric names", () => {
  test("declares every DESIGN §4 metric with its labels", () => {
    for (const [name, labels] of Object.entries(DESIGN_4))
      assert.deepEqual(METRICS[name as keyof typeof METRICS]?.labels, labels, name);
  });

  test("uses the §4 queue-wait buckets", () => {
    assert.deepEqual(QUEUE_WAIT_BUCKETS_S, [0.1, 0.5, 1, 5, 15, 30, 60, 120, 300]);
    assert.equal(METRICS[MetricIds.laneQueueWaitSeconds].buckets, QUEUE_WAIT_BUCKETS_S);
  });

  test("docs/metrics.md documents every metric with its kind and labels", () => {
    const doc = readFileSync(new URL("../../docs/metrics.md", import.meta.url), "utf8");
    for (const [name, def] of Object.entries(METRICS)) {
      const labels = def.labels.length === 0 ? "—" : def.labels.map((l) => `\`${l}\``).join(", ");
      assert.ok(
        doc.includes(`| \`${name}\` | ${def.kind} | ${labels} | `),
        `${name} (${def.kind}; ${labels})`,
      );
    }
  });

  test("names counters *_total and nothing else", () => {
    for (const [name, def] of Object.entries(METRICS))
      assert.equal(name.endsWith("_total"), def.kind === "counter", name);
  });
});

describe("writeSnapshotGauges", () => {
  test("writes each gauge from the snapshot, breaker state as 0/1/2", () => {
    const snapshot: Snapshot = {
      enabled: true,
      generated_at: "2025-01-01T00:00:00.000Z",
      replica: "test:1",
      lanes: [
        {
          lane: "chat",
          limit: 4,
          reserve: 1,
          width: 4,
          queue_limit: 16,
          inflight: 3,
          queued: 2,
          queued_by_priority: { interactive: 0, default: 2, bulk: 0 },
          oldest_wait_s: 1,
          wait_p50_s_5m: 0,
          wait_p90_s_5m: 0,
          queue_timeouts_5m: 0,
          saturated: false,
          // Its pod's breaker is half open: the servers took capacity away.
          state: "gateway_degraded",
          paused_s: 0,
          flows: [
            { flow: "key:team-a", inflight: 2, queued: 1, weight: 3, share: 0.75, used: 0.667 },
            { flow: "anonymous", inflight: 1, queued: 1, weight: 1, share: 0.25, used: 0.333 },
          ],
        },
      ],
      pods: [
        {
          id: "p",
          lane: "chat",
          lanes: ["chat"],
          width: 3,
          ceiling: 8,
          floor: 1,
          inflight: 3,
          breaker: "half_open",
          reopens_in_s: 0,
          trips: 1,
          paused_s: 0,
          quota_paused_s: 0,
        },
      ],
      groups: [{ group: "g", limit: 10, inflight: 3 }],
      keys: [{ key: "team-a", max_inflight: 4, inflight: 2, queued: 1 }],
      accounts: [],
    };
    const seen: string[] = [];
    const sink: MetricSink = {
      counter() {},
      histogram() {},
      gauge(name, labels, value) {
        seen.push(`${name}${JSON.stringify(labels)}=${value}`);
      },
    };
    writeSnapshotGauges(snapshot, sink);
    writeSnapshotGauges(snapshot, new NoopSink()); // drops everything, throws nothing
    assert.deepEqual(seen.sort(), [
      'sluice_breaker_state{"pod":"p"}=1',
      'sluice_group_inflight{"group":"g"}=3',
      'sluice_key_inflight{"key":"team-a"}=2',
      'sluice_key_queued{"key":"team-a"}=1',
      'sluice_lane_flow_inflight{"lane":"chat","flow":"anonymous"}=1',
      'sluice_lane_flow_inflight{"lane":"chat","flow":"key:team-a"}=2',
      'sluice_lane_flow_queued{"lane":"chat","flow":"anonymous"}=1',
      'sluice_lane_flow_queued{"lane":"chat","flow":"key:team-a"}=1',
      'sluice_lane_flow_share{"lane":"chat","flow":"anonymous"}=0.25',
      'sluice_lane_flow_share{"lane":"chat","flow":"key:team-a"}=0.75',
      'sluice_lane_inflight{"lane":"chat"}=3',
      'sluice_lane_limit{"lane":"chat"}=4',
      'sluice_lane_queue_depth{"lane":"chat","priority":"bulk"}=0',
      'sluice_lane_queue_depth{"lane":"chat","priority":"default"}=2',
      'sluice_lane_queue_depth{"lane":"chat","priority":"interactive"}=0',
      'sluice_lane_state{"lane":"chat","state":"gateway_degraded"}=1',
      'sluice_lane_state{"lane":"chat","state":"local_queue"}=0',
      'sluice_lane_state{"lane":"chat","state":"ok"}=0',
      'sluice_pod_ceiling{"pod":"p"}=8',
      'sluice_pod_inflight{"pod":"p"}=3',
      'sluice_pod_width{"pod":"p"}=3',
    ]);
  });
});
