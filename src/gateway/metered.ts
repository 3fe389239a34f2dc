/**
 * Which models need a request's token estimate before the call is admitted: those with a token
 * budget on their path — their own `tpm`, their account's `tpm`, or either on a fallback they may
 * be routed to. Everywhere else the estimate is never read (a request budget, `rpm`, counts one
 * per call whatever its size; in-flight bounds count calls), so counting the prompt's tokens there
 * was wasted work on every call, refused ones included (issue 13: ≈ 7 % of the gateway's CPU in a
 * retry storm).
 */
import type { GatewayConfig } from "../config/types.js";

/**
 * The names of the models whose calls must carry a token estimate (see above). A key's or
 * tenant's `tpm` is on the path of its calls to every model, so with one configured every model's
 * calls are estimated (whoever calls: the estimate is read before the key's budget is known to
 * matter, and one rule keeps every model's answer the same).
 */
export function meteredModels(config: GatewayConfig): Set<string> {
  const keyed =
    config.auth.keys.some((k) => k.tpm !== undefined) ||
    Object.values(config.tenants).some((t) => t.tpm !== undefined);
  if (keyed) return new Set(config.models.map((m) => m.name));
  const own = new Set<string>();
  for (const m of config.models) if (m.tpm !== undefined) own.add(m.name);
  for (const a of Object.values(config.accounts))
    if (a.tpm !== undefined) for (const m of a.models) own.add(m);
  const byName = new Map(config.models.map((m) => [m.name, m]));
  const metered = new Set<string>();
  for (const m of config.models) {
    // Follow the fallback chain (a loop in it is refused by the config, but stop on one anyway).
    const seen = new Set<string>();
    for (
      let at = m.name as string | undefined;
      at !== undefined && !seen.has(at);
      at = byName.get(at)?.fallback
    ) {
      seen.add(at);
      if (own.has(at)) {
        metered.add(m.name);
        break;
      }
    }
  }
  return metered;
}
