/**
 * Bounds that another bound makes unreachable: valid, but the operator believes a limit applies
 * that never can, so each is a warning naming the key, both numbers and what to change. The
 * gateway admits `max_concurrency + max_queued` requests and runs `max_concurrency` of them; a
 * model runs at most its limit, its pods' total and any group's bound. For example (the reason
 * this file exists): a model of 32 in flight and 128 queued behind the default gateway bound of
 * 32 + 32 can never have more than 32 waiting, so its queue of 128 never fills.
 */
import type { Checker } from "./checks.js";
import { formatPath, type Segment } from "./issues.js";
import type { RawConfig } from "./raw.js";
import { nearestKey } from "./suggest.js";
import type { GatewayConfig, ModelConfig } from "./types.js";

type Config = Omit<GatewayConfig, "warnings">;

/** The lane limit the Governor enforces: `max_concurrent_requests: 0` means "its pods' total". */
export function laneLimit(m: Pick<ModelConfig, "maxConcurrentRequests" | "pods">): number {
  return m.maxConcurrentRequests === 0 ? podTotal(m) : m.maxConcurrentRequests;
}

function podTotal(m: Pick<ModelConfig, "pods">): number {
  return m.pods.reduce((sum, p) => sum + p.maxInflight, 0);
}

/** Reports every bound the others make unreachable, as warnings on `c`. */
export function warnUnreachable(c: Checker, raw: RawConfig, config: Config): void {
  const { maxConcurrency: C, maxQueued } = config.admission;
  const admitted = C + maxQueued;
  const gateway = `the gateway admits ${admitted} requests at most (admission.max_concurrency ${C} + max_queued ${maxQueued})`;
  // Only values someone wrote are questioned: a default is not a belief the operator holds.
  const gatewayWritten =
    raw.admission.max_concurrency !== undefined || raw.admission.max_queued !== undefined;
  const warn = (at: Segment[], message: string) => c.warn({ path: formatPath(at), message });

  config.models.forEach((m, i) => {
    const at = ["models", i];
    const written = raw.models[i]!;
    const limit = laneLimit(m);
    const pods = podTotal(m);
    if (written.max_concurrent_requests !== undefined && limit > pods) {
      warn(
        [...at, "max_concurrent_requests"],
        `${limit} is above the sum of its pods' max_inflight (${pods}), so at most ${pods} of its calls are ever in flight`,
      );
    }
    if (limit > C) {
      warn(
        [...at, "max_concurrent_requests"],
        `${limit} is above admission.max_concurrency (${C}): the gateway runs at most ${C} calls at once, so this model never has more than ${C} in flight`,
      );
    }
    // While the model's own slots are all busy, the rest of the gateway's admissions can wait.
    const busy = Math.min(limit, pods, C);
    const room = admitted - busy;
    const queueWritten = written.queue_limit !== undefined || written.max_concurrent_requests !== undefined;
    if (m.queueLimit > room && (queueWritten || gatewayWritten)) {
      // Past everything the gateway admits it never fills; below that, only while the model runs
      // fewer calls than its slots (its pods narrowed or tripped).
      const fills =
        m.queueLimit > admitted
          ? "can never fill"
          : `fills only while this model runs fewer than ${busy} calls (its pods narrowed or tripped)`;
      warn(
        [...at, "queue_limit"],
        `a queue of ${m.queueLimit} ${fills}: ${gateway}, so with this model's ${busy} slots busy at most ${room} can wait; raise admission.max_queued to ${m.queueLimit + busy - C} or lower queue_limit to ${room}`,
      );
    }
    groupTags(c, raw, config, m, i);
    tokenWidth(c, config, m, i, Math.min(limit, pods, C));
  });

  for (const [name, account] of Object.entries(config.accounts)) {
    const models = config.models.filter((m) => account.models.includes(m.name));
    const most = Math.min(
      C,
      models.reduce((sum, m) => sum + Math.min(laneLimit(m), podTotal(m)), 0),
    );
    if (account.maxInflight !== undefined && account.maxInflight >= most) {
      warn(
        ["accounts", name, "max_inflight"],
        `${account.maxInflight} never binds: its models (${models.map((m) => m.name).join(", ")}) run at most ${most} calls at once (their limits and pods, and admission.max_concurrency ${C})`,
      );
    }
  }

  config.auth.keys.forEach((k, i) => {
    if (k.maxInflight !== undefined && k.maxInflight > admitted) {
      warn(
        ["auth", "keys", i, "max_inflight"],
        `${k.maxInflight} never binds: it counts a key's calls in flight and queued, and ${gateway}`,
      );
    }
  });
}

/**
 * A token budget the lane's concurrency cannot use (issue 25 item 9): every call that names no
 * `max_tokens` reserves `default_max_tokens` plus its prompt, so a bucket of `tpm` runs at most
 * ⌊tpm ÷ default_max_tokens⌋ of them at once — `tpm: 20000` with the default 4096 lets 4 of a
 * lane's 40 slots work, and the rest of a burst waits or is refused. Said for the model's own
 * bucket and for each account bucket on its path, with the default that would let the lane fill.
 */
function tokenWidth(c: Checker, config: Config, m: ModelConfig, i: number, slots: number): void {
  const buckets: [Segment[], number][] = [];
  if (m.tpm !== undefined) buckets.push([["models", i, "tpm"], m.tpm]);
  for (const [name, account] of Object.entries(config.accounts))
    if (account.tpm !== undefined && account.models.includes(m.name))
      buckets.push([["accounts", name, "tpm"], account.tpm]);
  for (const [at, tpm] of buckets) {
    const calls = Math.floor(tpm / m.defaultMaxTokens);
    if (calls >= slots) continue;
    const fits = Math.floor(tpm / slots);
    c.warn({
      path: formatPath(at),
      message:
        `${tpm} tokens/min lets at most ${calls} of model ${m.name}'s ${slots} slots work at once when calls name no max_tokens ` +
        `(each reserves default_max_tokens ${m.defaultMaxTokens} plus its prompt; embeddings reserve their input only): ` +
        `set models[${i}].default_max_tokens to the answers' usual length (${fits} or less fills the lane) or raise tpm to ${slots * m.defaultMaxTokens}`,
    });
  }
}

// A GPU group bounds what its members may run: a member's own larger bound is unreachable, and a
// tag no group lists bounds nothing at all.
function groupTags(c: Checker, raw: RawConfig, config: Config, m: ModelConfig, i: number): void {
  const at = ["models", i];
  const written = raw.models[i]!;
  const listed = Object.keys(config.gpuGroups);
  const unlisted = (tag: string) => {
    const near = nearestKey(tag, listed);
    return `${tag} is not listed in gpu_groups, so it bounds nothing${near ? ` (did you mean "${near}"?)` : ""}`;
  };
  const warn = (segments: Segment[], message: string) => c.warn({ path: formatPath(segments), message });
  if (m.gpuGroup !== undefined) {
    const group = config.gpuGroups[m.gpuGroup];
    if (group === undefined) warn([...at, "gpu_group"], unlisted(m.gpuGroup));
    else if (laneLimit(m) > group.maxInflight) {
      warn(
        [...at, "max_concurrent_requests"],
        `${laneLimit(m)} is above gpu_groups.${m.gpuGroup}.max_inflight (${group.maxInflight}), so this model never has more than ${group.maxInflight} in flight`,
      );
    }
  }
  m.pods.forEach((p, j) => {
    const group = Object.hasOwn(config.gpuGroups, p.gpuGroup) ? config.gpuGroups[p.gpuGroup] : undefined;
    if (group === undefined) {
      // The default tag (the URL's hostname) is unbounded on purpose; only a written one is questioned.
      if (written.pods[j]?.gpu_group !== undefined)
        warn([...at, "pods", j, "gpu_group"], unlisted(p.gpuGroup));
    } else if (p.maxInflight > group.maxInflight) {
      warn(
        [...at, "pods", j, "max_inflight"],
        `${p.maxInflight} is above gpu_groups.${p.gpuGroup}.max_inflight (${group.maxInflight}), so this pod never has more than ${group.maxInflight} in flight`,
      );
    }
  });
}
