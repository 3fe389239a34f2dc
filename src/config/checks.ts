/**
 * Checks that span keys: unique names and digests, references to models (with a "did you mean"),
 * fallback loops, pods shared between models, routes that would shadow the gateway's own paths.
 * Each problem names the key to fix.
 */
import { formatPath, type Issue, type Segment } from "./issues.js";
import type { RawConfig, RawModel } from "./raw.js";
import type { ConfigWarning, ModelConfig } from "./schema.js";
import { nearestKey } from "./suggest.js";

/** Paths the gateway serves itself; a `routes[].match` may not capture them (DESIGN §3.3). */
const RESERVED_PATHS = ["/v1/", "/healthz", "/readyz", "/metrics", "/api/telemetry/"];

/** Collects problems and warnings while a config is checked. */
export class Checker {
  readonly issues: Issue[] = [];
  constructor(readonly warn: (w: ConfigWarning) => void) {}

  error(segments: readonly Segment[], expected: string, received: unknown, hint?: string): void {
    this.issues.push({ segments, expected, received, ...(hint === undefined ? {} : { hint }) });
  }
}

/** Key ids and digests are unique within one list. */
export function checkKeys(c: Checker, keys: RawConfig["admin"]["keys"], at: Segment[]): void {
  const ids = new Map<string, number>();
  const digests = new Map<string, number>();
  keys.forEach((k, i) => {
    const sameId = ids.get(k.id);
    if (sameId !== undefined)
      c.error([...at, i, "id"], `an id not already used by ${formatPath([...at, sameId])}`, k.id);
    else ids.set(k.id, i);
    const hex = k.sha256.toString("hex");
    const sameDigest = digests.get(hex);
    if (sameDigest !== undefined) {
      c.error([...at, i, "sha256"], `a digest different from ${formatPath([...at, sameDigest])}'s`, hex);
    } else digests.set(hex, i);
  });
}

/** Model names are unique; returns name → index. */
export function checkModelNames(c: Checker, models: readonly RawModel[]): Map<string, number> {
  const names = new Map<string, number>();
  models.forEach((m, i) => {
    const first = names.get(m.name);
    if (first !== undefined)
      c.error(["models", i, "name"], `a name not already used by models[${first}]`, m.name);
    else names.set(m.name, i);
  });
  return names;
}

/** True when `value` names a model; otherwise records the problem, with a suggestion when a name is close. */
export function refersToModel(c: Checker, at: Segment[], value: string, names: Map<string, number>): boolean {
  if (names.has(value)) return true;
  const near = nearestKey(value, [...names.keys()]);
  c.error(
    at,
    `the name of a model in models (${[...names.keys()].join(", ")})`,
    value,
    near && `did you mean "${near}"?`,
  );
  return false;
}

/** A fallback names another, existing model and its chain ends. */
export function checkFallbacks(c: Checker, models: readonly RawModel[], names: Map<string, number>): void {
  for (const [i, m] of models.entries()) {
    if (m.fallback === undefined) continue;
    const at = ["models", i, "fallback"];
    if (m.fallback === m.name) {
      c.error(at, "the name of another model", m.fallback);
      continue;
    }
    if (!refersToModel(c, at, m.fallback, names)) continue;
    // Follow the chain: a loop would bounce a call between tripped lanes. Each model on the loop
    // is reported once, at its own fallback.
    const chain = [m.name];
    for (let next: string | undefined = m.fallback; next !== undefined && !chain.includes(next); ) {
      chain.push(next);
      const idx = names.get(next);
      next = idx === undefined ? undefined : models[idx]?.fallback;
      if (next === m.name) {
        c.error(at, "a fallback chain that ends", m.fallback, `loops: ${[...chain, next].join(" → ")}`);
      }
    }
  }
}

/** A pod is one budget keyed by its URL: two models may share it only with the same ceiling. */
export function checkPodsAcrossModels(c: Checker, models: readonly ModelConfig[]): void {
  const owner = new Map<string, { i: number; j: number; maxInflight: number }>();
  models.forEach((m, i) => {
    m.pods.forEach((p, j) => {
      const first = owner.get(p.url);
      if (first === undefined) owner.set(p.url, { i, j, maxInflight: p.maxInflight });
      else if (first.i !== i && first.maxInflight !== p.maxInflight) {
        c.error(
          ["models", i, "pods", j, "max_inflight"],
          `${first.maxInflight}, as for the same URL at models[${first.i}].pods[${first.j}]`,
          p.maxInflight,
        );
      }
    });
  });
}

/** Routes are unique, leave the gateway's own paths alone and name existing models. */
export function checkRoutes(c: Checker, routes: RawConfig["routes"], names: Map<string, number>): void {
  const seen = new Map<string, number>();
  routes.forEach((r, i) => {
    const clash = RESERVED_PATHS.find((p) => p.startsWith(r.match) || r.match.startsWith(p));
    if (clash !== undefined) {
      c.error(
        ["routes", i, "match"],
        "a path prefix that does not capture the gateway's own paths",
        r.match,
        `clashes with ${clash}`,
      );
    }
    const first = seen.get(r.match);
    if (first !== undefined)
      c.error(["routes", i, "match"], `a prefix not already used by routes[${first}]`, r.match);
    else seen.set(r.match, i);
    refersToModel(c, ["routes", i, "model"], r.model, names);
  });
}

/** A record key (group or account name) is a usable name. */
export function validName(c: Checker, at: Segment[], value: string, what: string): boolean {
  if (/^\S+$/.test(value) && value !== "__proto__") return true;
  c.error(at, `${what} (a non-empty string without spaces)`, value);
  return false;
}
