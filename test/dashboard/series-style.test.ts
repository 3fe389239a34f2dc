/**
 * The page's drawing rules (src/dashboard/page/series-style.js), loaded as the browser loads them
 * (issue 25 item 13): every pod's width line is distinguishable from every other's, and the
 * gateway's admission bound is not listed as a GPU group.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";

interface StyleModule {
  podStroke(i: number, count: number): { dash: number[]; width: number };
  gpuGroups(
    groups: { group: string; limit: number; inflight: number }[],
    admission: { max_inflight: number; inflight: number } | undefined,
  ): { group: string }[];
}

const page = (await import(
  new URL("../../src/dashboard/page/series-style.js", import.meta.url).href
)) as StyleModule;

describe("dashboard drawing rules", () => {
  test("no two of up to eight pods share a stroke, and earlier ones are drawn wider", () => {
    for (let count = 2; count <= 8; count++) {
      const strokes = Array.from({ length: count }, (_, i) => page.podStroke(i, count));
      const keys = new Set(strokes.map((s) => `${s.dash.join(",")}|${s.width}`));
      assert.equal(keys.size, count, `${count} pods drawn alike`);
      const dashes = new Set(strokes.map((s) => s.dash.join(",")));
      assert.equal(dashes.size, count, `${count} pods share a dash pattern`);
      for (let i = 1; i < count; i++) assert.ok(strokes[i]!.width < strokes[i - 1]!.width);
    }
  });

  test("the admission bound is not a GPU group; a real group named gateway still is", () => {
    const admission = { max_inflight: 16, inflight: 3 };
    const groups = [
      { group: "gateway", limit: 16, inflight: 3 },
      { group: "gb10", limit: 40, inflight: 3 },
    ];
    assert.deepEqual(
      page.gpuGroups(groups, admission).map((g) => g.group),
      ["gb10"],
    );
    assert.deepEqual(
      page.gpuGroups([{ group: "gateway", limit: 8, inflight: 0 }], admission).map((g) => g.group),
      ["gateway"],
    );
    assert.equal(page.gpuGroups(groups, undefined).length, 2);
  });
});
