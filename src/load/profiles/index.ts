/**
 * Every profile `sluice load` knows, by name, in the order `--help` lists them. A profile is one
 * file; one registered as not built yet becomes one file once what it needs exists
 * (replace the entry with the profile).
 */
import type { LoadProfile, NotBuiltProfile } from "../types.js";
import { autoscale } from "./autoscale.js";
import { modelCapacity } from "./model-capacity.js";
import { ocrFlood } from "./ocr-flood.js";
import { panelBurst } from "./panel-burst.js";
import { sharedGpu } from "./shared-gpu.js";

export const LOAD_PROFILES: ReadonlyArray<LoadProfile | NotBuiltProfile> = [
  ocrFlood,
  sharedGpu,
  panelBurst,
  modelCapacity,
  autoscale,
  {
    name: "provider-tokens",
    seed: "004",
    title: "small and large requests against a tokens/minute account: never a provider 429 through sluice",
    notBuilt: true,
    reason:
      "the gateway's token budgets (tpm) and the provider simulator's account mode (src/sim/provider.ts) exist, but the load runner starts only `sluice sim` pods: it does not yet start the provider simulator, check its answers byte for byte or measure tokens per minute at it — meanwhile bench/provider-tokens.ts runs the same comparison",
  },
];

/** The profile named `name`, or undefined. */
export function findProfile(name: string): LoadProfile | NotBuiltProfile | undefined {
  return LOAD_PROFILES.find((p) => p.name === name);
}

/** True for a registered profile that cannot run yet. */
export function isNotBuilt(p: LoadProfile | NotBuiltProfile): p is NotBuiltProfile {
  return "notBuilt" in p;
}
