/**
 * Every profile `sluice load` knows, by name, in the order `--help` lists them. A profile is one
 * file; the two registered as not built yet become one file each once what they need exists
 * (replace the entry with the profile).
 */
import type { LoadProfile, NotBuiltProfile } from "../types.js";
import { modelCapacity } from "./model-capacity.js";
import { ocrFlood } from "./ocr-flood.js";
import { panelBurst } from "./panel-burst.js";
import { sharedGpu } from "./shared-gpu.js";

export const LOAD_PROFILES: ReadonlyArray<LoadProfile | NotBuiltProfile> = [
  ocrFlood,
  sharedGpu,
  panelBurst,
  modelCapacity,
  {
    name: "autoscale",
    seed: "004",
    title:
      "replicas 1 → 10 behind one provider account: per-process limits multiply, a shared store does not",
    notBuilt: true,
    reason:
      "it needs fleet mode, the Redis store shared by replicas (issue 7), to run replicas 1 → 10 against one provider account; it is added (one file in src/load/profiles/) when that lands",
  },
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
