/**
 * The page's refusal counting (src/dashboard/page/refusals.js), which is pure apart from its
 * fetch: Prometheus text summed by code over lanes, and the count in the trailing minute (or
 * since the page opened), restarted when the counters go down (a restarted gateway).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { CAPACITY_REFUSAL_CODES } from "../../src/core/errors.js";

interface Rates {
  t: number;
  span: number;
  perMinute: Map<string, number>;
}
interface RefusalsModule {
  CODES: string[];
  OTHER: string;
  parseRefusals(text: string): Map<string, number>;
  RefusalRates: new (
    onRates: (r: Rates) => void,
    onProblem: (p: string) => void,
  ) => {
    add(t: number, totals: Map<string, number>): void;
  };
}

// A browser module, plain JS with JSDoc (type-checked by src/dashboard/tsconfig.json): loaded as it is.
const page = (await import(
  new URL("../../src/dashboard/page/refusals.js", import.meta.url).href
)) as RefusalsModule;

const METRICS = `# HELP sluice_refusals_total Requests sluice answered no
# TYPE sluice_refusals_total counter
sluice_refusals_total{lane="chat",reason="queue_full"} 7
sluice_refusals_total{lane="-",reason="queue_full"} 3
sluice_refusals_total{lane="chat",reason="upstream_unavailable"} 2
sluice_refusals_total{lane="-",reason="unauthorized"} 4
sluice_refusals_total{lane="-",reason="bad_request"} 1
sluice_refusals_total{lane="we\\"ird,reason=\\"x",reason="key_limit"} 5
sluice_would_refuse_total{lane="chat",reason="queue_full"} 100
`;

test("sums each code over lanes, and every other reason as bad input", () => {
  const totals = page.parseRefusals(METRICS);
  assert.deepEqual(Object.fromEntries(totals), {
    queue_full: 10,
    upstream_unavailable: 2,
    "bad input": 5,
    key_limit: 5,
  });
});

test("counts the trailing minute, or since the page opened while that is shorter, and restarts on a reset", () => {
  const seen: Rates[] = [];
  const rates = new page.RefusalRates(
    (r) => seen.push(r),
    () => assert.fail("no problem expected"),
  );
  const at = (t: number, n: number) => rates.add(t, new Map([["queue_full", n]]));
  at(1000, 10);
  at(1010, 15);
  at(1030, 40);
  const last = () => seen.at(-1)!;
  assert.deepEqual([last().span, last().perMinute.get("queue_full")], [30, 30]);
  // From here the base is the newest sample at least a minute old (with the page's 2 s polls, 60–62 s).
  at(1065, 50);
  assert.deepEqual([last().span, last().perMinute.get("queue_full")], [65, 40]);
  at(1075, 52);
  assert.deepEqual([last().span, last().perMinute.get("queue_full")], [65, 37]);
  at(1095, 60);
  assert.deepEqual([last().span, last().perMinute.get("queue_full")], [65, 20]);
  at(1100, 3); // the counter went down: a restarted gateway
  assert.deepEqual([last().span, last().perMinute.get("queue_full")], [0, 0]);
  for (const code of [...page.CODES, page.OTHER]) assert.ok(last().perMinute.has(code), code);
});

test("the page charts the capacity codes of src/core/errors.ts, in their order", () => {
  // The page is served as written and cannot import the TypeScript: its copy is held equal here.
  assert.deepEqual(page.CODES, [...CAPACITY_REFUSAL_CODES]);
});
