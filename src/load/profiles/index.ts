/**
 * Every profile `sluice load` knows, by name, in the order `--help` lists them. A profile is one
 * file; the two registered as not built yet become one file each once what they need exists
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
      "it needs the gateway's token budgets (tpm, issue 8) and the provider simulator's account mode; it is added (one file in src/load/profiles/) when they land — meanwhile bench/provider-tokens.ts runs the same comparison",
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
