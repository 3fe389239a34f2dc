/**
 * Named behaviours for `sluice sim --profile` (DESIGN §6): starting points that misbehave like
 * the real servers sluice sits in front of. Flags given with a profile override its values.
 */
import type { SimProfile } from "./options.js";

/** The profile names `sluice sim --profile` accepts. */
export type SimProfileName = "vllm" | "ocr-pod" | "provider";

/** Each profile's options. */
export const SIM_PROFILES: Readonly<Record<SimProfileName, Readonly<SimProfile>>> = Object.freeze({
  /** One vLLM pod: 8 running, an unbounded waiting queue, latency that grows with the queue. */
  vllm: { maxNumSeqs: 8, overflow: "queue", serviceMs: 300, tokensPerSecond: 50 },
  /** An OCR pod: two pages at a time, two waiting, and connections refused past that. */
  "ocr-pod": {
    model: "ocr",
    maxNumSeqs: 2,
    maxWaiting: 2,
    overflow: "refuse",
    serviceMs: 250,
    echoPrefix: "/ocr/",
  },
  /** A hosted provider: 429 with `retry-after` past an account's concurrency. */
  provider: { maxNumSeqs: 16, maxWaiting: 0, overflow: "429", serviceMs: 400, tokensPerSecond: 80 },
});

/** True when `name` is a known profile. */
export function isSimProfileName(name: string): name is SimProfileName {
  return Object.hasOwn(SIM_PROFILES, name);
}
