/** A profile small enough to run in a test in well under a second: one pod, one burst. */
import type { LoadProfile } from "../../src/load/types.js";

/**
 * Ten chats at once at a lane of 2 with a queue of 4: 6 answered, 4 refused by sluice. The service
 * time is long beside a burst's spread on a loaded machine (a 20 ms service let a seventh call in
 * on CI when the burst's last arrivals came after the first answer).
 */
export function tinyProfile(overrides: Partial<LoadProfile> = {}): LoadProfile {
  return {
    name: "tiny",
    seed: "test",
    title: "ten calls at a lane of two",
    story: [],
    defaultScale: 1,
    pods: [{ model: "m", options: { maxNumSeqs: 4, serviceMs: 200, jitterSigma: 0, tokensPerSecond: 0 } }],
    config: (urls) => ({
      models: [
        {
          name: "m",
          max_concurrent_requests: 2,
          reserve: 0,
          queue_limit: 4,
          adaptive: false,
          pods: (urls.m ?? []).map((url) => ({ url, max_inflight: 2 })),
        },
      ],
    }),
    groups: [
      { name: "chats", request: { kind: "chat", model: "m" }, arrival: { kind: "burst", count: 10 } },
      {
        name: "streams",
        request: { kind: "chat", model: "m", stream: true },
        arrival: { kind: "burst", count: 0 },
      },
    ],
    durationMs: 50,
    drainMs: 5_000,
    checks: (s) => [{ name: "some answered", target: "> 0", value: `${s.completed}`, met: s.completed > 0 }],
    directChecks: (d) => [
      { name: "all answered without sluice", target: "10", value: `${d.completed}`, met: d.completed === 10 },
    ],
    ...overrides,
  };
}
