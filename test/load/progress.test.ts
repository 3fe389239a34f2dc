/** The progress display: one bar redrawn in place on a terminal, plain lines otherwise. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createProgress } from "../../src/load/progress.js";

const live = () => ({
  offered: 120,
  completed: 80,
  notCompleted: 30,
  attempts: 130,
  open: 10,
  elapsedMs: 500,
});

test("on a TTY: a bar redrawn in place, ended by a newline", () => {
  const writes: string[] = [];
  const p = createProgress({ isTTY: true, columns: 200, write: (t) => writes.push(t) }, "ocr-flood");
  p.start("through sluice", 1000, live);
  p.stop();
  assert.ok(writes.length >= 2);
  assert.ok(
    writes.every((w) => w.startsWith("\r")),
    "every draw returns to the line's start",
  );
  assert.match(
    writes[0]!,
    /ocr-flood through sluice \[#{10}\.{10}\] {2}50% 0\.5 s {2}offered 120, done 80, refused\/failed 30, open 10/,
  );
  assert.ok(writes.at(-1)!.endsWith("\n"));
});

test("not on a TTY: plain lines, no control characters", () => {
  const writes: string[] = [];
  const p = createProgress({ isTTY: false, write: (t) => writes.push(t) }, "ocr-flood");
  p.start("straight to the pods", 2000, live);
  p.stop();
  assert.deepEqual(writes, [
    "ocr-flood straight to the pods: offering for 2.0 s, then draining\n",
    "ocr-flood straight to the pods: done at 0.5 s, offered 120, done 80, refused/failed 30, open 10\n",
  ]);
});
