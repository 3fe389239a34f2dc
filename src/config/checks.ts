/**
 * Checks that span keys: unique names and digests, references to models (with a "did you mean"),
 * fallback loops, pods shared between models, routes that would shadow the gateway's own paths,
 * metrics settings with nothing to read, upstream keys missing from the environment. Each problem
 * names the key to fix.
 */
import { ConfigErrors, formatPath, type Issue, type Segment, toConfigError } from "./issues.js";
import type { RawConfig, RawModel } from "./raw.js";
import { nearestKey } from "./suggest.js";
import type { BreakerConfig, ConfigWarning, GatewayConfig, ModelConfig } from "./types.js";

/** Paths the gateway serves itself; a `routes[].match` may not capture them. */
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

/** A pod is one budget keyed by its URL: two models may share it only with the same ceiling and breaker. */
export function checkPodsAcrossModels(c: Checker, models: readonly ModelConfig[]): void {
  const owner = new Map<string, { i: number; j: number; maxInflight: number }>();
  const breakerReported = new Set<number>();
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
      // One URL is one breaker: a second model's breaker settings would silently not apply.
      const breaker = first === undefined ? undefined : models[first.i]!.breaker;
      if (breaker !== undefined && first!.i !== i && !sameBreaker(breaker, m.breaker)) {
        if (breakerReported.has(i)) return;
        breakerReported.add(i);
        c.error(
          ["models", i, "breaker"],
          `the same breaker as models[${first!.i}] (both list ${p.url}, one pod with one breaker)`,
          rawBreaker(m.breaker),
        );
      }
    });
  });
}

const sameBreaker = (a: BreakerConfig, b: BreakerConfig): boolean =>
  a.enabled === b.enabled &&
  a.failThreshold === b.failThreshold &&
  a.baseCooldownMs === b.baseCooldownMs &&
  a.maxCooldownMs === b.maxCooldownMs &&
  a.backoffFactor === b.backoffFactor;

/** A breaker as the config writes it, for the error's "got". */
const rawBreaker = (b: BreakerConfig) => ({
  enabled: b.enabled,
  fail_threshold: b.failThreshold,
  base_cooldown_s: b.baseCooldownMs / 1000,
  max_cooldown_s: b.maxCooldownMs / 1000,
  backoff_factor: b.backoffFactor,
});

/**
 * Metrics polling acts only through a pod's `metrics_url` and only on an adaptive width: a
 * `max_waiting`/`metrics_poll_s` with no `metrics_url` to read, or a `metrics_url` under
 * `adaptive: false`, would be accepted and change nothing, so each is refused.
 */
export function checkMetricsPolling(c: Checker, models: readonly RawModel[]): void {
  models.forEach((m, i) => {
    const polled = m.pods.some((p) => p.metrics_url !== undefined);
    if (m.adaptive === false) {
      m.pods.forEach((p, j) => {
        if (p.metrics_url === undefined) return;
        c.error(
          ["models", i, "pods", j, "metrics_url"],
          "no metrics_url while the model's adaptive is false",
          p.metrics_url,
          "a pod's metrics only narrow its adaptive width; remove metrics_url or turn adaptive on",
        );
      });
      return;
    }
    if (polled) return;
    for (const key of ["max_waiting", "metrics_poll_s"] as const) {
      const value = m.adaptive[key];
      if (value === undefined) continue;
      c.error(
        ["models", i, "adaptive", key],
        "a pod of this model with a metrics_url",
        key === "metrics_poll_s" ? value / 1000 : value,
        `${key} applies to the metrics read from pods[].metrics_url, and no pod of this model has one; add metrics_url or remove ${key}`,
      );
    }
  });
}

/**
 * Every `upstream_api_key_env` names a variable set (non-empty) in `env`: otherwise the gateway
 * would forward calls without the upstream key and every one would fail at the provider.
 */
export function checkUpstreamKeys(
  c: Checker,
  models: readonly Pick<ModelConfig, "name" | "upstreamApiKeyEnv">[],
  env: Readonly<Record<string, string | undefined>>,
): void {
  models.forEach((m, i) => {
    const name = m.upstreamApiKeyEnv;
    if (name === undefined || (env[name] ?? "") !== "") return;
    c.error(
      ["models", i, "upstream_api_key_env"],
      "the name of an environment variable that is set",
      name,
      `model ${m.name} sends its upstream key from ${name}, which is not set in sluice's environment; set it before starting`,
    );
  });
}

/**
 * For a config parsed without `env` (the library path): refuses it when a model's
 * `upstream_api_key_env` is unset or empty in `env`, naming the model and the variable. The
 * gateway calls it with the environment it will read keys from.
 *
 * @throws ConfigErrors listing every model whose variable is missing.
 */
export function assertUpstreamKeys(
  config: Pick<GatewayConfig, "models">,
  env: Readonly<Record<string, string | undefined>>,
): void {
  const c = new Checker(() => {});
  checkUpstreamKeys(c, config.models, env);
  if (c.issues.length > 0) throw new ConfigErrors(c.issues.map((issue) => toConfigError(issue)));
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
