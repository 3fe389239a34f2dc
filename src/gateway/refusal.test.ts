import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  BreakerOpenError,
  KeyLimitError,
  QueueFullError,
  QuotaPausedError,
  RateLimitError,
  StoreUnavailableError,
} from "../core/errors.js";
import { type LaneNumbers, refusalBody, wireMessage } from "./refusal.js";

/** What the body was before it was built from parts: the reference. */
function reference(code: string, message: string, n: LaneNumbers, retryMs: number): string {
  return JSON.stringify({
    error: {
      type: "sluice_capacity",
      code,
      message,
      lane: n.lane,
      inflight: n.inflight,
      queued: n.queued,
      queue_limit: n.queueLimit,
      width: n.width,
      retry_after_ms: retryMs,
      ...(n.state === undefined ? {} : { state: n.state }),
    },
  });
}

const lanes: LaneNumbers[] = [
  { lane: "bench-d", inflight: 16, queued: 128, queueLimit: 128, width: 16 },
  { lane: "", inflight: 0, queued: 0, queueLimit: 0, width: 0 },
  { lane: 'we"ird\\lane\u2028ü😀', inflight: -0, queued: 1e21, queueLimit: 3, width: 1.5 },
  { lane: "nan", inflight: Number.NaN, queued: Number.POSITIVE_INFINITY, queueLimit: 1, width: 2 },
  { lane: "chat", inflight: 4, queued: 8, queueLimit: 8, width: 4, state: "local_queue" },
  { lane: "chat", inflight: 1, queued: 3, queueLimit: 8, width: 1, state: "gateway_degraded" },
];
const messages = [
  "lane bench-d is full (16 in flight, 128/128 queued); retry in 1000 ms",
  'quotes " and \\ backslash\nnewline\ttab \u0001 control \ud800 lone surrogate',
];

describe("refusal body", () => {
  test("is byte for byte what JSON.stringify makes of the refusal object", () => {
    for (const n of lanes) {
      for (const message of messages) {
        for (const retryMs of [1000, 1234, Number.NaN]) {
          for (const code of ["queue_full", "upstream_unavailable"]) {
            assert.equal(refusalBody(code, message, n, retryMs), reference(code, message, n, retryMs));
          }
        }
      }
    }
  });
});

describe("refusal message", () => {
  test("names the wait the answer asks for (its jittered Retry-After), not the floor it was drawn from", () => {
    const floor = 1000;
    const sent = 1092;
    const errors = [
      new QueueFullError("chat", 4, 8, 8, 4, floor, "full"),
      new KeyLimitError("team-a", 2, 1, 3, floor),
      new BreakerOpenError("chat", "http://10.0.0.5:8000", floor),
      new QuotaPausedError("chat", 2, floor),
      new RateLimitError("chat", "chat", "tokens", 5000, 60_000, 1000, floor, "cannot_cover_in_time"),
      new StoreUnavailableError("connection refused", floor),
    ];
    for (const error of errors) {
      const message = wireMessage(error, sent);
      assert.ok(message.endsWith(`retry in ${sent} ms`), `${error.name}: ${message}`);
      assert.ok(!message.includes(`${floor} ms`), `${error.name} still names the floor: ${message}`);
    }
    // The pod address stays out of the client's answer.
    assert.ok(!wireMessage(errors[2]!, sent).includes("10.0.0.5"));
  });
});
