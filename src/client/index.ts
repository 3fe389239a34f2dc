/**
 * `sluice/client`: the calling side of the contract (DESIGN §6). `createSluiceFetch` returns a
 * `fetch` that keeps its window at what the gateway advertises, waits out sluice's refusals with
 * full jitter, and never sends twice a call the gateway forwarded.
 */
export { DEFAULT_RETRY_AFTER_MS, REPLAYABLE_REASONS, retryAfterMsOf, sluiceRefusal } from "./answer.js";
export {
  createSluiceFetch,
  DEFAULT_MAX_RETRIES,
  type FetchLike,
  type LaneWindow,
  MAX_JITTER_SPAN_MS,
  retryDelayMs,
  type SluiceFetch,
  type SluiceFetchOptions,
} from "./fetch.js";
export { ClientWindow, type Slot, type SlotOutcome, type WindowSnapshot } from "./window.js";
