/**
 * Named behaviours for `sluice sim --profile` (DESIGN §6): starting points that misbehave like
 * the real servers sluice sits in front of. Flags given with a profile override its values.
 */
import type { SimProfile } from "./options.js";

/** The profile names `sluice sim --profile` accepts. */
export type SimProfileName = "vllm" | "ocr-pod" | "provider";

/** Each profile's options. */
export const SIM_PROFILES: Readonly<Record<SimProfileName, Readonly<SimProfile>>> = Object.freeze({
  /**
   * One vLLM pod on a box whose memory holds fewer sequences than it is configured to run (seed
   * 001's GB10): 64 running, an unbounded waiting queue, latency that grows with the queue, and
   * an OOM at the 49th running sequence — the host is unreachable for 10 s, then back.
   */
  vllm: {
    maxNumSeqs: 64,
    overflow: "queue",
    serviceMs: 300,
    tokensPerSecond: 50,
    oomAt: 48,
    oomDownMs: 10_000,
  },
  /**
   * An OCR pod (seed 000): four pages at a time, a backlog of four, and past that connections
   * refused (reset before any response byte, the upload unread). A page is 19 s of service run
   * at a time scale of 0.01: 190 ms.
   */
  "ocr-pod": {
    model: "ocr",
    maxNumSeqs: 4,
    maxWaiting: 4,
    overflow: "refuse",
    serviceMs: 19_000,
    timeScale: 0.01,
    echoPrefix: "/ocr/",
  },
  /** A hosted provider: 429 with `retry-after` past an account's concurrency. */
  provider: { maxNumSeqs: 16, maxWaiting: 0, overflow: "429", serviceMs: 400, tokensPerSecond: 80 },
});

/** True when `name` is a known profile. */
export function isSimProfileName(name: string): name is SimProfileName {
  return Object.hasOwn(SIM_PROFILES, name);
}
