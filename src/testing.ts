/**
 * `sluice/testing`: what users need to test their own code against sluice deterministically.
 */

export { AimdWidth, FixedWidth, type WidthAlgorithm } from "./core/aimd.js";
export { ManualClock } from "./core/clock.js";
