/**
 * `sluice plan`: flags (or a running server's metrics) → src/plan → the sizing, human-readable
 * or `--json`. Thin: parsing and printing only. A bad or missing number exits 2 naming its flag.
 */
import type { ParseArgsConfig } from "node:util";
import { stringify } from "yaml";
import { PlanInputError, planInput } from "../plan/input.js";
import { type Measured, MeasureError, measure } from "../plan/measure.js";
import { fmt, type Plan, plan } from "../plan/plan.js";
import { parseCliArgs } from "./args.js";

const USAGE = `usage: sluice plan --rps R --latency-s L [--tokens-per-request T [--reasoning-tokens R] --tpm N] [--pods P --per-pod-max M] [--json]
       sluice plan --from-metrics URL [--sample-s S] [any flag above, which wins over what is measured]

Sizes a model's limits: Little's-law concurrency (rps × latency), the ceiling a tokens-per-minute
budget sustains (tpm ÷ 60 ÷ tokens per request × latency), what the pods carry, which binds, and
a config snippet.

  --rps R                 requests per second to carry
  --latency-s L           mean latency of one request, seconds (the model's thinking time included)
  --tokens-per-request T  mean tokens per request, prompt + completion (with --tpm)
  --reasoning-tokens R    mean reasoning tokens per request on top of T (metered as output; with --tpm)
  --tpm N                 the account's tokens per minute
  --pods P                pods serving the model (with --per-pod-max)
  --per-pod-max M         calls one pod carries at once (its --max-num-seqs)
  --from-metrics URL      measure rps, latency and tokens from a sluice gateway's or vLLM server's /metrics
  --sample-s S            how long --from-metrics watches (default 10)
  --json                  print the plan as JSON
  -h, --help              show this help
`;

/** Every flag `sluice plan` accepts (node:util parseArgs options); the help has a line for each. */
export const OPTIONS = {
  rps: { type: "string" },
  "latency-s": { type: "string" },
  "tokens-per-request": { type: "string" },
  "reasoning-tokens": { type: "string" },
  tpm: { type: "string" },
  pods: { type: "string" },
  "per-pod-max": { type: "string" },
  "from-metrics": { type: "string" },
  "sample-s": { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

/** Where `main` writes; tests pass their own. */
export interface PlanCliIo {
  out?: (text: string) => void;
  err?: (text: string) => void;
}

/** Runs `sluice plan` with the arguments after `plan`; resolves to the exit code. */
export async function main(argv: string[], io: PlanCliIo = {}): Promise<number> {
  const out = io.out ?? ((t: string) => process.stdout.write(t));
  const err = io.err ?? ((t: string) => process.stderr.write(t));
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseCliArgs(argv, OPTIONS));
  } catch (e) {
    err(`sluice plan: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help === true) {
    out(USAGE);
    return 0;
  }
  try {
    let measured: Measured | null = null;
    const from = values["from-metrics"] as string | undefined;
    if (from !== undefined) {
      if (!/^https?:\/\//.test(from)) throw new PlanInputError("--from-metrics", "an http(s) URL", from);
      const raw = values["sample-s"] as string | undefined;
      const sampleS = raw === undefined ? 10 : Number(raw);
      if (raw !== undefined && (raw.trim() === "" || !Number.isFinite(sampleS) || sampleS <= 0)) {
        throw new PlanInputError("--sample-s", "a number of seconds > 0", raw);
      }
      measured = await measure(from, sampleS * 1000);
    } else if (values["sample-s"] !== undefined) {
      throw new PlanInputError("--from-metrics", "a metrics URL (--sample-s only applies to it)", undefined);
    }
    const input = planInput(values as Record<string, string>, {
      ...(measured ? { rps: measured.rps, latencyS: measured.latency_s } : {}),
      ...(measured?.tokens_per_request != null ? { tokensPerRequest: measured.tokens_per_request } : {}),
    });
    const p = plan(input);
    if (values.json === true) out(`${JSON.stringify(measured ? { measured, ...p } : p, null, 2)}\n`);
    else out(`${render(p, measured).join("\n")}\n`);
    return 0;
  } catch (e) {
    if (e instanceof PlanInputError) {
      err(`sluice plan: ${e.message}\n`);
      return 2;
    }
    if (e instanceof MeasureError) {
      err(`sluice plan: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}

/** Tokens per request as the ceiling divides by them: `1500`, or `(1500 + 3000 reasoning)`. */
function tokensTerm(i: Plan["input"]): string {
  const reasoning = i.reasoningTokens ?? 0;
  return reasoning > 0
    ? `(${fmt(i.tokensPerRequest!)} + ${fmt(reasoning)} reasoning)`
    : fmt(i.tokensPerRequest!);
}

/** The plan for people. */
function render(p: Plan, measured: Measured | null): string[] {
  const { input: i } = p;
  const lines: string[] = [];
  if (measured !== null) {
    lines.push(`measured from ${measured.source} at ${measured.url} over ${fmt(measured.window_s)} s:`);
    for (const n of measured.notes) lines.push(`  ${n}`);
    lines.push("");
  }
  lines.push(
    `Little's law      ${fmt(i.rps)} rps × ${fmt(i.latencyS)} s = ${fmt(p.concurrency)} calls in flight`,
  );
  if (p.token_ceiling !== null && p.token_rps !== null) {
    lines.push(
      `token ceiling     ${fmt(i.tpm!)} tpm ÷ 60 ÷ ${tokensTerm(i)} tokens × ${fmt(i.latencyS)} s = ` +
        `${fmt(p.token_ceiling)} calls in flight (${fmt(p.token_rps)} rps)`,
    );
  } else if (i.tokensPerRequest !== undefined) {
    lines.push(`token ceiling     none (no --tpm); ${fmt(i.tokensPerRequest)} tokens per request`);
  }
  if (p.pod_capacity !== null) {
    lines.push(`pods              ${i.pods} × ${i.perPodMax} = ${p.pod_capacity} calls in flight`);
  }
  lines.push(`binds             ${p.binds}`);
  for (const n of p.notes) lines.push(`  ${n}`);
  lines.push("", "suggested config:");
  const model: Record<string, unknown> = {
    name: "MODEL",
    max_concurrent_requests: p.config.max_concurrent_requests,
    queue_limit: p.config.queue_limit,
    queue_timeout_s: p.config.queue_timeout_s,
    ...(p.config.tpm !== undefined ? { tpm: p.config.tpm } : {}),
    pods:
      p.config.pods === undefined
        ? [{ url: "http://POD:8000" }]
        : Array.from({ length: p.config.pods.count }, (_, k) => ({
            url: `http://POD-${k + 1}:8000`,
            max_inflight: p.config.pods!.max_inflight,
          })),
  };
  lines.push(
    ...stringify({ models: [model] })
      .trimEnd()
      .split("\n"),
  );
  return lines;
}
