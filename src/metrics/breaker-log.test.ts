import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "../core/clock.js";
import { Governor } from "../governor/governor.js";
import { type BreakerLogLine, logBreakerChanges } from "./breaker-log.js";

const POD = "http://pod-a:8000";

/** Two lanes listing one pod (one URL is one breaker), fixed width, a 10 s cooldown without jitter. */
function setup() {
  const clock = new ManualClock();
  const pod = { id: POD, maxInflight: 1 };
  const breaker = { failThreshold: 1, baseCooldownMs: 10_000, maxCooldownMs: 10_000 };
  const gov = new Governor({
    clock,
    random: () => 0.5, // jitter factor 0.8 + 0.4 × 0.5 = 1
    lanes: {
      chat: { limit: 1, pods: [pod], adaptive: false, breaker },
      batch: { limit: 1, pods: [pod], adaptive: false, breaker },
    },
  });
  const lines: [BreakerLogLine, string][] = [];
  const sub = logBreakerChanges(gov, {
    warn: (fields, message) => lines.push([fields as BreakerLogLine, message]),
  });
  return { clock, gov, lines, sub };
}

describe("logBreakerChanges", () => {
  test("logs an opening at warn with the pod, every lane listing it, the cooldown and the trips", async () => {
    const { gov, lines } = setup();
    (await gov.acquire("chat")).failed(503);
    assert.deepEqual(lines, [
      [
        { pod: POD, lanes: ["chat", "batch"], from: "closed", to: "open", cooldown_s: 10, trips: 1 },
        "breaker closed → open",
      ],
    ]);
  });

  test("logs the half-open probe and the recovery, with no cooldown", async () => {
    const { gov, clock, lines } = setup();
    (await gov.acquire("chat")).failed(503);
    clock.advance(10_000);
    const probe = await gov.acquire("batch");
    probe.succeeded();
    assert.deepEqual(
      lines.map(([l, m]) => [m, l.cooldown_s]),
      [
        ["breaker closed → open", 10],
        ["breaker open → half_open", 0],
        ["breaker half_open → closed", 0],
      ],
    );
  });

  test("still logs, with the event's own lane, when the snapshot fails", async () => {
    const { gov } = setup();
    const lines: [BreakerLogLine, string][] = [];
    const failing = {
      onBreakerChange: gov.onBreakerChange,
      snapshot: (): never => {
        throw new Error("snapshot failed");
      },
    };
    logBreakerChanges(failing, {
      warn: (fields, message) => lines.push([fields as BreakerLogLine, message]),
    });
    (await gov.acquire("chat")).failed(503);
    const mine = lines.map(([l]) => [l.pod, l.lanes, l.to, l.cooldown_s]);
    assert.deepEqual(mine, [[POD, ["chat"], "open", 0]]);
  });

  test("stops logging once disposed", async () => {
    const { gov, lines, sub } = setup();
    sub[Symbol.dispose]();
    (await gov.acquire("chat")).failed(503);
    assert.deepEqual(lines, []);
  });
});
