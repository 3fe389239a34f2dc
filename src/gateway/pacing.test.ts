import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { describe, test } from "node:test";
import {
  holdUntil,
  IMMEDIATE_MS,
  MAX_HOLD_MS,
  MIN_EARLY_RETRIES,
  noteRefusal,
  onPacingStart,
  type PacedRequest,
  type PacingStart,
  SAMPLE_MS,
  setLoopSaturation,
} from "./pacing.js";

/** Only the socket's identity matters to the pacing: it keys a WeakMap. */
const socket = () => ({}) as Socket;

/** A request on `s`: the same arguments make the same request (a retry). */
function on(s: Socket | null, url = "/v1/chat/completions", length = "120", key?: string): PacedRequest {
  const headers: PacedRequest["headers"] = { "content-length": length };
  if (key !== undefined) headers["idempotency-key"] = key;
  return { socket: s as Socket, method: "POST", url, headers };
}

describe("pacing of early retries", () => {
  test("a connection never refused is never held", () => {
    const restore = setLoopSaturation(() => true);
    try {
      assert.equal(holdUntil(on(socket()), 0, 0), 0);
      assert.equal(holdUntil(on(null), 0, 0), 0);
    } finally {
      setLoopSaturation(restore);
    }
  });

  test("a retry before Retry-After is held until it while the loop is saturated, and answered at once when not", () => {
    const s = socket();
    noteRefusal(on(s), 1000, 1200);
    const restore = setLoopSaturation(() => true);
    try {
      assert.equal(holdUntil(on(s), 1210, 1211), 2200, "held until 1000 + 1200");
      setLoopSaturation(() => false);
      assert.equal(holdUntil(on(s), 1210, 1211), 0, "the loop keeps up: at once");
    } finally {
      setLoopSaturation(restore);
    }
  });

  test("a retry sent at once (within IMMEDIATE_MS of its refusal) is held even while the loop keeps up", () => {
    const s = socket();
    noteRefusal(on(s), 1000, 900);
    const restore = setLoopSaturation(() => false);
    try {
      assert.equal(holdUntil(on(s), 1000 + IMMEDIATE_MS, 1000 + IMMEDIATE_MS), 1900, "back at once: held");
      assert.equal(holdUntil(on(s), 1001 + IMMEDIATE_MS, 1001 + IMMEDIATE_MS), 0, "after a backoff: at once");
      assert.equal(holdUntil(on(s, "/ocr/pages-2"), 1001, 1001), 0, "another request at once: not a retry");
      // The held refusal is sent at 2200 and its client re-sends at once: held again.
      noteRefusal(on(s), 2200, 900);
      assert.equal(holdUntil(on(s), 2201, 2201), 3100);
    } finally {
      setLoopSaturation(restore);
    }
  });

  test("another request on the connection (a pooled client's next call) is answered at once; the same one again is held", () => {
    const s = socket();
    noteRefusal(on(s, "/ocr/pages-123", "4096"), 1000, 1200);
    const restore = setLoopSaturation(() => true);
    try {
      assert.equal(holdUntil(on(s, "/ocr/pages-124", "4096"), 1210, 1211), 0, "another URL");
      assert.equal(holdUntil(on(s, "/ocr/pages-123", "4097"), 1210, 1211), 0, "another length");
      assert.equal(holdUntil(on(s, "/ocr/pages-123", "4096"), 1210, 1211), 2200, "the same request");
      noteRefusal(on(s, "/v1/chat/completions", "120", "call-1"), 1000, 1200);
      assert.equal(holdUntil(on(s, "/v1/chat/completions", "120", "call-2"), 1210, 1211), 0, "another key");
      assert.equal(
        holdUntil(on(s, "/v1/chat/completions", "120", "call-1"), 1210, 1211),
        2200,
        "the same key",
      );
    } finally {
      setLoopSaturation(restore);
    }
  });

  test("a retry at or after Retry-After, or one whose hold has already passed, is answered at once", () => {
    const s = socket();
    noteRefusal(on(s), 1000, 1200);
    const restore = setLoopSaturation(() => true);
    try {
      assert.equal(holdUntil(on(s), 2200, 2200), 0, "came back when told");
      assert.equal(holdUntil(on(s), 2300, 2301), 0, "came back later");
      assert.equal(holdUntil(on(s), 1500, 2200), 0, "arrived early, decided once the time had come");
    } finally {
      setLoopSaturation(restore);
    }
  });

  test("each refusal moves its connection's time to come back", () => {
    const s = socket();
    const restore = setLoopSaturation(() => true);
    try {
      noteRefusal(on(s), 1000, 1000);
      noteRefusal(on(s), 2000, 1500);
      assert.equal(holdUntil(on(s), 2600, 2600), 3500);
    } finally {
      setLoopSaturation(restore);
    }
  });

  test("a hold lasts at most MAX_HOLD_MS, however long the Retry-After (a breaker's cooldown)", () => {
    const s = socket();
    noteRefusal(on(s), 1000, 60_000);
    const restore = setLoopSaturation(() => true);
    try {
      assert.equal(MAX_HOLD_MS, 1000);
      assert.equal(holdUntil(on(s), 1005, 1006), 1006 + MAX_HOLD_MS);
    } finally {
      setLoopSaturation(restore);
    }
  });

  test("pacing switching on is reported once, with the sample that did it (a storm is never silent)", () => {
    // The real saturation reading: a loop kept busy (a synchronous spin) past one sample while
    // early retries keep coming is saturated by them.
    const seen: PacingStart[] = [];
    const stop = onPacingStart((s) => seen.push(s));
    try {
      const s = socket();
      const t0 = performance.now();
      noteRefusal(on(s), t0, 60_000);
      let retries = 0;
      for (let now = t0; now - t0 < 3 * SAMPLE_MS; now = performance.now()) {
        holdUntil(on(s), now, now);
        retries++;
      }
      assert.ok(retries > 3 * MIN_EARLY_RETRIES, `${retries} early retries`);
      assert.equal(seen.length, 1, "reported when it switched on, not for each sample while on");
      assert.ok(seen[0]!.utilization >= 0.9, JSON.stringify(seen[0]));
      assert.ok(seen[0]!.earlyRetries >= MIN_EARLY_RETRIES && seen[0]!.sampleMs >= SAMPLE_MS);
    } finally {
      stop();
    }
  });
});
