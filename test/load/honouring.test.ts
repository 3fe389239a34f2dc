/**
 * Issue 25 item 14: a profile's third run, through sluice with clients that honour `Retry-After`,
 * lands in the receipt (`retry_after_honoured`) and in the report as a column between the other
 * two, and one line under the table says what "completed" means on each side: at the first
 * answer, or after how many retries. `ocr-flood` has that run, so its "50.8 % vs 100 % direct"
 * no longer reads as a loss.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { ocrFloodProfile } from "../../src/load/profiles/ocr-flood.js";
import type { Receipt } from "../../src/load/receipt.js";
import { renderReport } from "../../src/load/report.js";
import { runSession } from "../../src/load/session.js";
import { tinyProfile } from "./tiny.js";

const dir = mkdtempSync(join(tmpdir(), "sluice-honouring-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The tiny burst (10 at a lane of 2 + a queue of 4), plus a run whose clients retry sluice's refusals after their Retry-After. */
const profile = tinyProfile({
  honouring: {
    label: "through sluice, Retry-After honoured",
    retry: {
      maxAttempts: 50,
      sluiceRefusals: true,
      upstreamFailures: false,
      backoff: { baseMs: 0, maxMs: 0 },
    },
  },
  drainMs: 20_000,
});

describe("sluice load: the run that honours Retry-After", () => {
  test("its numbers are in the receipt and the report, with what each side's completion means", async () => {
    const path = join(dir, "tiny.json");
    const r = await runSession({ profile, scale: 1, command: "test", receiptPath: path });
    assert.equal(r.exitCode, 0, JSON.stringify(r.receipt.checks));
    const receipt = JSON.parse(readFileSync(path, "utf8")) as Receipt;

    // First answers through sluice: 6 of 10 (4 told no at once, not retried).
    assert.deepEqual([receipt.offered, receipt.completed, receipt.attempts], [10, 6, 10]);
    // The same burst honouring Retry-After: every call done, the refused ones after their wait.
    const h = receipt.retry_after_honoured!;
    assert.equal(h.target, "sluice");
    assert.deepEqual([h.offered, h.completed], [10, 10]);
    assert.ok(h.attempts > 10, `${h.attempts} attempts: the refused calls were sent again`);
    assert.equal(h.leaked_reservations, 0);
    assert.ok(
      receipt.checks.some((c) => /no reservation leaked.*Retry-After honoured/.test(c.name) && c.met),
      "its leak check is among the checks",
    );
    assert.ok(
      /sluice, Retry-After honoured/.test(receipt.checks.find((c) => /bytes exactly/.test(c.name))!.value),
    );

    const lines = renderReport(profile, receipt, path);
    const head = lines.find(
      (l) => l.includes("through sluice, Retry-After honoured") && l.includes("straight"),
    );
    assert.ok(head !== undefined, `a column for the run:\n${lines.join("\n")}`);
    assert.ok(
      head.indexOf("through sluice") < head.indexOf("Retry-After honoured") &&
        head.indexOf("Retry-After honoured") < head.indexOf("straight"),
      head,
    );
    const meaning = lines.filter((l) => l.startsWith("completed means"));
    assert.equal(meaning.length, 1, "one line");
    const retries = h.attempts - h.offered;
    assert.equal(
      meaning[0],
      "completed means — through sluice: 6 of 10 at the first answer, nothing retried; " +
        `through sluice, Retry-After honoured: 10 of 10 after ${retries} retries ` +
        `(${(h.attempts / 10).toFixed(1)} attempts a request), each refusal retried after its Retry-After; ` +
        "straight to the pods: 10 of 10 at the first answer, nothing retried",
    );
  });

  test("--only runs the one side asked for, not the third", async () => {
    const r = await runSession({
      profile,
      scale: 1,
      command: "test",
      receiptPath: join(dir, "only.json"),
      only: "sluice",
    });
    assert.equal(r.receipt.completed, 6);
    assert.equal(r.receipt.retry_after_honoured, null);
    assert.equal(r.receipt.direct, null);
  });

  test("ocr-flood runs it: its client sends a refused page again after the Retry-After, until done", () => {
    const h = ocrFloodProfile().honouring;
    assert.ok(h !== undefined, "ocr-flood has the third run");
    assert.equal(h.retry.sluiceRefusals, true);
    assert.ok(h.retry.maxAttempts >= 100, "the orchestrator's persistence, told when");
  });
});
