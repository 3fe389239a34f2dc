/**
 * Every profile `sluice load` knows, by name, in the order `--help` lists them. A profile is one
 * file; one registered as not built yet becomes one file once what it needs exists
 * (replace the entry with the profile).
 */
import type { LoadProfile, NotBuiltProfile } from "../types.js";
import { autoscale } from "./autoscale.js";
import { modelCapacity } from "./model-capacity.js";
import { noisyNeighbour, noisyNeighbourFleet } from "./noisy-neighbour.js";
import { ocrFlood } from "./ocr-flood.js";
import { panelBurst } from "./panel-burst.js";
import { providerTokens } from "./provider-tokens.js";
import { sharedGpu } from "./shared-gpu.js";

export const LOAD_PROFILES: ReadonlyArray<LoadProfile | NotBuiltProfile> = [
  ocrFlood,
  sharedGpu,
  panelBurst,
  modelCapacity,
  autoscale,
  providerTokens,
  noisyNeighbour,
  noisyNeighbourFleet,
];

/** The profile named `name`, or undefined. */
export function findProfile(name: string): LoadProfile | NotBuiltProfile | undefined {
  return LOAD_PROFILES.find((p) => p.name === name);
}

/** True for a registered profile that cannot run yet. */
export function isNotBuilt(p: LoadProfile | NotBuiltProfile): p is NotBuiltProfile {
  return "notBuilt" in p;
}
