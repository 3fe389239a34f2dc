/**
 * docs/grafana/sluice.json can't drift from what sluice exports (issue 12): every metric its
 * queries use exists on a running gateway's /metrics (a histogram's `_bucket`, `_count` and
 * `_sum` series through the histogram), every label a query selects on or groups by is one of
 * that metric's labels (src/metrics/names.ts), and it charts the families the issue names.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { METRICS, MetricIds } from "../../src/metrics/names.js";
import { call, model, type Stack, SUITE, sha256hex, startStack } from "../gateway/helpers.js";

interface Panel {
  type: string;
  title: string;
  targets?: { expr: string }[];
  panels?: Panel[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; query?: string | { query: string } }[] };
}

const dashboard = JSON.parse(readFileSync("docs/grafana/sluice.json", "utf8")) as Dashboard;

/** Every PromQL expression of the dashboard: panel targets and template variable queries. */
function expressions(): { where: string; expr: string }[] {
  const out: { where: string; expr: string }[] = [];
  const walk = (panels: Panel[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) out.push({ where: `panel "${p.title}"`, expr: t.expr });
      walk(p.panels ?? []);
    }
  };
  walk(dashboard.panels);
  for (const v of dashboard.templating.list) {
    const q = typeof v.query === "string" ? v.query : v.query?.query;
    if (q && /sluice_/.test(q)) out.push({ where: `variable $${v.name}`, expr: q });
  }
  return out;
}

const HISTOGRAM_SERIES = /^(.*)_(bucket|count|sum)$/;

/** The metric a series name belongs to: itself, or the histogram it is a series of. */
function metricOf(series: string): string {
  if (Object.hasOwn(METRICS, series)) return series;
  const m = HISTOGRAM_SERIES.exec(series);
  return m && Object.hasOwn(METRICS, m[1]!) ? m[1]! : series;
}

describe("docs/grafana/sluice.json", SUITE, () => {
  let stack: Stack;
  let exported: Map<string, string>;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 2, serviceMs: 1 }],
      config: ([pod]) => ({
        auth: { keys: [{ id: "app", sha256: sha256hex("k") }] },
        models: [model("m", [pod!], { queue_limit: 2 }, 2)],
      }),
    });
    const text = (await call(stack.url, "/metrics")).text;
    exported = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
  });
  after(() => stack.close());

  test("every metric its queries use exists on a running gateway's /metrics", () => {
    const all = expressions();
    assert.ok(all.length >= 20, `${all.length} queries`);
    for (const { where, expr } of all) {
      const names = [...expr.matchAll(/\bsluice_[a-z0-9_]+\b/g)].map((m) => m[0]);
      assert.ok(names.length > 0, `${where} queries no sluice metric: ${expr}`);
      for (const series of names) {
        const metric = metricOf(series);
        const kind = exported.get(metric);
        assert.ok(kind !== undefined, `${where}: ${series} is not on /metrics (${expr})`);
        if (series !== metric)
          assert.equal(kind, "histogram", `${where}: ${series} needs ${metric} to be a histogram`);
      }
    }
  });

  test("every label a query selects on or groups by is a label of its metric", () => {
    for (const { where, expr } of expressions()) {
      const used = new Set<string>(["le"]);
      for (const m of expr.matchAll(/\b(sluice_[a-z0-9_]+)\b(?:\{([^}]*)\})?/g)) {
        const series = m[1]!;
        const labels = METRICS[metricOf(series) as keyof typeof METRICS]?.labels ?? [];
        for (const l of labels) used.add(l);
        for (const sel of (m[2] ?? "").matchAll(/(\w+)\s*(?:=~|!~|!=|=)/g)) {
          assert.ok(
            (labels as readonly string[]).includes(sel[1]!),
            `${where}: ${series} has no label ${sel[1]} (${labels.join(", ")})`,
          );
        }
      }
      for (const by of expr.matchAll(/\bby\s*\(([^)]*)\)/g)) {
        for (const label of by[1]!.split(",").map((s) => s.trim())) {
          assert.ok(used.has(label), `${where}: groups by ${label}, which none of its metrics has (${expr})`);
        }
      }
      for (const lv of expr.matchAll(/label_values\((\w+),\s*(\w+)\)/g)) {
        assert.ok(
          ((METRICS[lv[1] as keyof typeof METRICS]?.labels ?? []) as readonly string[]).includes(lv[2]!),
          where,
        );
      }
    }
  });

  test("charts lanes, pods, refusals, latency by outcome and tokens", () => {
    const text = expressions()
      .map((e) => e.expr)
      .join("\n");
    const wanted = [
      MetricIds.laneInflight,
      MetricIds.laneLimit,
      MetricIds.laneQueueDepth,
      MetricIds.laneQueueWaitSeconds,
      MetricIds.laneQueueTimeoutsTotal,
      MetricIds.refusalsTotal,
      MetricIds.wouldRefuseTotal,
      MetricIds.podWidth,
      MetricIds.podCeiling,
      MetricIds.podInflight,
      MetricIds.breakerState,
      MetricIds.upstreamOverloadsTotal,
      MetricIds.upstreamFailuresTotal,
      MetricIds.tokensTotal,
      MetricIds.requestDurationSeconds,
      MetricIds.requestsTotal,
    ];
    for (const name of wanted) assert.match(text, new RegExp(`\\b${name}(_bucket|_count|_sum)?\\b`), name);
    assert.match(
      text,
      /sluice_request_duration_seconds_bucket\{[^}]*outcome="ok"/,
      "answer latency by outcome",
    );
    assert.match(text, /by \(outcome\)/, "requests by outcome");
  });
});
